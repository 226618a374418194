// Realtime sessions (spec section 4): POST /v1/realtime/sessions creates one for the authenticated client; the
// SDP exchange that follows attaches the call to that client's most recent unused session. A device that posts
// its SDP without creating a session first gets one implicitly (the session resource only carries ICE servers,
// which the server already knows). Sessions expire after ttlMs unused; a session is used by at most one call.
import type { Modality } from '../../protocol/session.js';
import { newId } from './eventWriter.js';

export interface SessionRecord {
  id: string;
  workspaceId: string;
  clientId: string;
  modalities: Modality[];
  /** performance.now() ms, as expiresAt: a board without a real-time clock steps its wall clock when NTP syncs */
  createdAt: number;
  expiresAt: number;
  implicit: boolean;
}

export class SessionRegistry {
  private readonly sessions = new Map<string, SessionRecord>();

  constructor(
    private readonly ttlMs = 10 * 60_000,
    /** bounds memory if a client keeps creating sessions it never uses */
    private readonly maxSessions = 1000,
  ) {}

  create(workspaceId: string, clientId: string, modalities: Modality[], now = performance.now()): SessionRecord {
    this.sweep(now);
    if (this.sessions.size >= this.maxSessions) {
      const oldest = this.sessions.keys().next().value;
      if (oldest !== undefined) this.sessions.delete(oldest);
    }
    const s = this.make(workspaceId, clientId, modalities, now, false);
    this.sessions.set(s.id, s);
    return s;
  }

  private make(workspaceId: string, clientId: string, modalities: Modality[], now: number, implicit: boolean): SessionRecord {
    return { id: newId('sess'), workspaceId, clientId, modalities, createdAt: now, expiresAt: now + this.ttlMs, implicit };
  }

  /** Removes and returns the client's newest unexpired session, or an implicit one. */
  claim(workspaceId: string, clientId: string, now = performance.now()): SessionRecord {
    this.sweep(now);
    let newest: SessionRecord | undefined;
    for (const s of this.sessions.values()) {
      if (s.clientId === clientId && s.workspaceId === workspaceId && (!newest || s.createdAt >= newest.createdAt)) newest = s;
    }
    if (newest) {
      this.sessions.delete(newest.id);
      return newest;
    }
    return this.make(workspaceId, clientId, ['audio', 'text'], now, true);
  }

  get size(): number {
    return this.sessions.size;
  }

  private sweep(now: number): void {
    for (const [id, s] of this.sessions) if (s.expiresAt <= now) this.sessions.delete(id);
  }
}

// Short-lived client keys for the GA WebRTC route (POST /v1/realtime/client_secrets -> POST /v1/realtime/calls).
// A server that holds a device's credentials (or the device itself) mints a key and hands it to a client that
// must not hold them (a browser page, a stock SDK); the key is bound to the minting device's workspace and client
// id, so a call made with it is that device's call: per-device call limits, stories and logs stay as they are.
// Only a SHA-256 of each key is kept, expired keys are swept on every mint, and the number of live keys is capped
// so a client minting in a loop cannot grow memory.
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../auth/secrets.js';
import type { GaSessionConfig } from './gaSession.js';

/** The prefix stock clients check for a client key (the JavaScript SDK refuses other keys in a browser). */
export const CLIENT_KEY_PREFIX = 'ek_';
export const DEFAULT_KEY_TTL_S = 600;
export const MIN_KEY_TTL_S = 10;
export const MAX_KEY_TTL_S = 7200;
const MAX_LIVE_KEYS = 10_000;

export interface ClientKeyGrant {
  workspaceId: string;
  clientId: string;
  /** the session configuration minted with the key: applied to the call it opens */
  session: GaSessionConfig;
  /** on the store's clock (monotonic): a board without a real-time clock steps its wall clock when NTP syncs, and
   *  a key minted just before a step forward was refused as expired */
  expiresAt: number;
}

export class ClientSecretStore {
  private readonly keys = new Map<string, ClientKeyGrant>();

  constructor(
    private readonly now: () => number = () => performance.now(),
    /** the wall clock, only for the expires_at shown to clients */
    private readonly wallNow: () => number = Date.now,
  ) {}

  /** The new key, and when it expires on the wall clock (ms since the epoch, for clients). */
  mint(grant: Omit<ClientKeyGrant, 'expiresAt'>, ttlSeconds = DEFAULT_KEY_TTL_S): { value: string; expiresAt: number } {
    this.sweep();
    if (this.keys.size >= MAX_LIVE_KEYS) {
      // the oldest key goes first: Map keeps insertion order
      const oldest = this.keys.keys().next().value;
      if (oldest !== undefined) this.keys.delete(oldest);
    }
    const value = CLIENT_KEY_PREFIX + randomBytes(24).toString('base64url');
    this.keys.set(sha256Hex(value), { ...grant, expiresAt: this.now() + ttlSeconds * 1000 });
    return { value, expiresAt: this.wallNow() + ttlSeconds * 1000 };
  }

  /** The grant of a live key, or undefined (unknown, expired or malformed). */
  resolve(value: string): ClientKeyGrant | undefined {
    if (!value.startsWith(CLIENT_KEY_PREFIX) || value.length > 200) return undefined;
    const digest = sha256Hex(value);
    const g = this.keys.get(digest);
    if (!g) return undefined;
    if (g.expiresAt <= this.now()) {
      this.keys.delete(digest);
      return undefined;
    }
    return g;
  }

  get size(): number {
    return this.keys.size;
  }

  private sweep(): void {
    const t = this.now();
    for (const [k, g] of this.keys) if (g.expiresAt <= t) this.keys.delete(k);
  }
}

/** The bearer token of an Authorization header, or undefined. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  const v = Array.isArray(header) ? header[0] : header;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(v ?? '');
  return m?.[1];
}

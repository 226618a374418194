// The realtime session resource (spec section 2) and the media parameters both peers use.

export interface IceServer {
  urls: string[];
  username: string;
  credential: string;
}

export interface RealtimeSession {
  id: string;
  iceServers: IceServer[];
}

export type Modality = 'text' | 'audio';

/** Opus over RTP at 48 kHz; 20 ms frames are what both peers send. */
export const AUDIO = {
  sampleRate: 48_000,
  channels: 1,
  frameMs: 20,
  samplesPerFrame: 960,
  opusPayloadType: 111,
} as const;

export function parseRealtimeSession(value: unknown): RealtimeSession | undefined {
  const v = value as Partial<RealtimeSession> | null;
  if (!v || typeof v.id !== 'string' || !Array.isArray(v.iceServers)) return undefined;
  const iceServers: IceServer[] = [];
  for (const s of v.iceServers as unknown[]) {
    const o = s as Record<string, unknown>;
    const urls = Array.isArray(o?.urls) ? o.urls : typeof o?.urls === 'string' ? [o.urls] : undefined;
    if (!urls || !urls.every((u) => typeof u === 'string')) return undefined;
    iceServers.push({ urls: urls as string[], username: String(o.username ?? ''), credential: String(o.credential ?? '') });
  }
  return { id: v.id, iceServers };
}

// The realtime session resource (spec section 2); the media parameters are in media.ts.

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

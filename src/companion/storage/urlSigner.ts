// Signed, time-limited audio URLs (audio_url, preview_url). The URL names a stored file and an expiry;
// an HMAC-SHA256 over both, keyed by a random per-installation key, proves the server issued it.
// Checked on every fetch: expired -> URL_EXPIRED, any other change -> INVALID_SIGNATURE (both 403).
// Paths are a fixed shape (<kind>/<uuid>.<ext>), so a signed URL can never reach outside the audio directory.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { RestError } from '../../protocol/restErrors.js';

export const AUDIO_ROUTE_PREFIX = '/v1/audio/';

const PATH_RE = /^(voices|tts|stories)\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.(wav|mp3)$/;

export function isStoredAudioPath(rel: string): boolean {
  return PATH_RE.test(rel);
}

export interface SignedUrl {
  url: string;
  expiresIn: number;
}

const EXPIRY_STEP_S = 10;
const CACHE_MAX = 50_000;

export class UrlSigner {
  private readonly cache = new Map<string, string>();

  constructor(
    private readonly key: Buffer,
    /** public base, e.g. http://127.0.0.1:8787 */
    private baseUrl: string,
    readonly ttlSeconds: number,
    private readonly now: () => number = Date.now,
  ) {
    if (key.length < 32) throw new RangeError('UrlSigner: the key must be at least 32 bytes');
    this.baseUrl = baseUrl.replace(/\/+$/, '');
  }

  setBaseUrl(baseUrl: string): void {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.cache.clear();
  }

  /** A signed URL for a stored file (relative to the audio directory), valid for at least ttlSeconds.
   *  The expiry is rounded up to a 10 s step, so within a step the same file gets the same URL and the HMAC
   *  is computed once (voice lists sign every preview on every request). */
  sign(relPath: string, ttlSeconds = this.ttlSeconds): SignedUrl {
    const expires = Math.ceil((Math.floor(this.now() / 1000) + ttlSeconds) / EXPIRY_STEP_S) * EXPIRY_STEP_S;
    const key = `${relPath}?${expires}`;
    let url = this.cache.get(key);
    if (url === undefined) {
      if (!isStoredAudioPath(relPath)) throw new RangeError(`UrlSigner: not a stored audio path: ${relPath}`);
      if (this.cache.size >= CACHE_MAX) this.cache.clear();
      url = `${this.baseUrl}${AUDIO_ROUTE_PREFIX}${relPath}?expires=${expires}&signature=${this.mac(relPath, expires)}`;
      this.cache.set(key, url);
    }
    return { url, expiresIn: ttlSeconds };
  }

  /** Checks a fetched URL's path and query; returns the stored relative path or throws a 403 RestError. */
  verify(relPath: string, expiresRaw: unknown, signatureRaw: unknown): string {
    const expires = typeof expiresRaw === 'string' && /^\d{1,12}$/.test(expiresRaw) ? Number(expiresRaw) : NaN;
    const signature = typeof signatureRaw === 'string' ? signatureRaw : '';
    if (!isStoredAudioPath(relPath) || !Number.isFinite(expires) || !/^[A-Za-z0-9_-]{43}$/.test(signature)) {
      throw new RestError('INVALID_SIGNATURE', 'the audio URL is not a valid signed URL');
    }
    const expected = Buffer.from(this.mac(relPath, expires), 'base64url');
    const given = Buffer.from(signature, 'base64url');
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
      throw new RestError('INVALID_SIGNATURE', 'the audio URL signature does not match');
    }
    if (Math.floor(this.now() / 1000) > expires) throw new RestError('URL_EXPIRED', 'the audio URL has expired');
    return relPath;
  }

  private mac(relPath: string, expires: number): string {
    return createHmac('sha256', this.key).update(`${relPath}\n${expires}`).digest('base64url');
  }
}

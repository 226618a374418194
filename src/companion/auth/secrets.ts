// Hashing and comparison of device secrets and workspace keys. Both are long random strings (>= 32 chars, keys
// are 32 random bytes), so a plain SHA-256 is the right hash: a slow password hash protects guessable
// secrets, and these are not guessable. Only hashes are stored; comparisons are constant-time.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** Constant-time equality of two hex digests (false when their lengths differ). */
export function digestsEqual(aHex: string, bHex: string): boolean {
  const a = Buffer.from(aHex, 'hex');
  const b = Buffer.from(bHex, 'hex');
  return a.length === b.length && a.length > 0 && timingSafeEqual(a, b);
}

/** A new workspace key: 'wk_' + 43 base64url characters (256 bits). */
export function generateWorkspaceKey(): string {
  return `wk_${randomBytes(32).toString('base64url')}`;
}

/** A short, non-reversible label for logs and admin output (never the secret itself). */
export function fingerprint(value: string): string {
  return sha256Hex(value).slice(0, 12);
}

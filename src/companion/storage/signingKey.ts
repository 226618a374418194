// The HMAC key of signed audio URLs: 32 random bytes in <dataDir>/url-signing.key (mode 0600), created on
// first start and kept, so URLs issued before a restart stay valid until they expire.
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync, chmodSync } from 'node:fs';
import path from 'node:path';

export function loadOrCreateSigningKey(dataDir: string): Buffer {
  const file = path.join(dataDir, 'url-signing.key');
  try {
    const k = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64url');
    if (k.length >= 32) return k;
  } catch {
    /* absent: create below */
  }
  const key = randomBytes(32);
  try {
    writeFileSync(file, key.toString('base64url') + '\n', { mode: 0o600, flag: 'wx' });
  } catch {
    // another process created it first (or the file was unreadable garbage): use what is on disk if valid
    const k = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64url');
    if (k.length >= 32) return k;
    writeFileSync(file, key.toString('base64url') + '\n', { mode: 0o600 });
  }
  chmodSync(file, 0o600);
  return key;
}

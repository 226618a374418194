// The device's identity (spec section 5): a client id (UUID v4) and a client secret from the CSPRNG, kept in
// <stateDir>/identity.json, mode 0600, written atomically. Under trust on first use the server enrolls the
// first secret it sees, so losing the secret locks the device out: an existing identity is never silently
// replaced, and a corrupt file is an error that tells the user how to recover.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { promises as fs, constants as fsc } from 'node:fs';
import path from 'node:path';
import { isUuid, MIN_SECRET_LENGTH } from '../protocol/headers.js';
import { cleanAtomicTempFiles, ownerOfDirectory, writeFileAtomic } from '../common/atomicFile.js';
import { AgentError } from './errors.js';

export interface Identity {
  clientId: string;
  clientSecret: string;
  /** ISO time of creation */
  createdAt: string;
}

export const IDENTITY_FILE = 'identity.json';

export function identityPath(stateDir: string): string {
  return path.join(stateDir, IDENTITY_FILE);
}

/** A short, non-reversible label of a secret for logs and CLI output: `sha256:ab12cd34ef56`. */
export function fingerprint(secret: string): string {
  return 'sha256:' + createHash('sha256').update(secret).digest('hex').slice(0, 12);
}

export function generateIdentity(now = new Date()): Identity {
  // 32 random bytes = 256 bits; base64url gives 43 characters (the spec asks for >= 32).
  return { clientId: randomUUID(), clientSecret: randomBytes(32).toString('base64url'), createdAt: now.toISOString() };
}

// A corrupt file has lost its client id too: without a backup the device needs a new identity (a new client).
const RECOVERY =
  'Under trust on first use the server only accepts the secret it saw first. Restore identity.json from a ' +
  'backup, or make a new identity (a new client id) with `speaker-agent enroll --reset-identity`; where the ' +
  'workspace does not enroll new clients by itself, the admin registers it.';

export interface LoadIdentityResult {
  identity: Identity;
  /** the file had a mode other than 0600 and was fixed */
  fixedMode?: number;
  /** temp files of an interrupted write that were removed */
  cleanedTempFiles: number;
}

/** Reads the identity; AgentError identity_missing / identity_corrupt otherwise. Fixes a too-open mode. */
export async function loadIdentity(stateDir: string): Promise<LoadIdentityResult> {
  const file = identityPath(stateDir);
  const cleanedTempFiles = await cleanAtomicTempFiles(file);
  let text: string;
  let mode: number;
  try {
    const fh = await fs.open(file, fsc.O_RDONLY);
    try {
      mode = (await fh.stat()).mode & 0o777;
      text = await fh.readFile('utf8');
    } finally {
      await fh.close();
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new AgentError('identity_missing', `no identity at ${file}: run \`speaker-agent enroll\` to create one`, { cause: err });
    }
    throw new AgentError('identity_corrupt', `cannot read the identity ${file}: ${(err as Error).message}`, { cause: err });
  }
  const identity = parseIdentity(text);
  if (!identity.ok) {
    throw new AgentError('identity_corrupt', `the identity file ${file} is corrupt (${identity.reason}). It was NOT replaced. ${RECOVERY}`);
  }
  let fixedMode: number | undefined;
  if (mode !== 0o600) {
    await fs.chmod(file, 0o600);
    fixedMode = mode;
  }
  return { identity: identity.value, fixedMode, cleanedTempFiles };
}

function parseIdentity(text: string): { ok: true; value: Identity } | { ok: false; reason: string } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'not valid JSON' };
  }
  const o = v as Partial<Identity> | null;
  if (!o || typeof o !== 'object') return { ok: false, reason: 'not a JSON object' };
  if (!isUuid(o.clientId)) return { ok: false, reason: 'clientId is not a UUID' };
  if (typeof o.clientSecret !== 'string' || o.clientSecret.length < MIN_SECRET_LENGTH) {
    return { ok: false, reason: `clientSecret is missing or shorter than ${MIN_SECRET_LENGTH} characters` };
  }
  return { ok: true, value: { clientId: o.clientId, clientSecret: o.clientSecret, createdAt: String(o.createdAt ?? '') } };
}

export async function saveIdentity(stateDir: string, identity: Identity): Promise<void> {
  await fs.mkdir(stateDir, { recursive: true, mode: 0o700 });
  await writeFileAtomic(identityPath(stateDir), JSON.stringify(identity, null, 2) + '\n', { mode: 0o600 });
}

export interface EnsureIdentityResult extends LoadIdentityResult {
  created: boolean;
  /** on reset: where the replaced identity was kept (a reset is still recoverable) */
  keptOld?: string;
}

/** Copies an existing identity file aside (mode 0600) before a reset; returns its path, if there was one.
 *  Descriptors only, links refused at both ends: run as root (sudo) in the service user's directory, a copy by
 *  name could read a link put in identity.json's place (/etc/shadow) and hand the copy to that user. */
async function keepOldIdentity(stateDir: string): Promise<string | undefined> {
  const file = identityPath(stateDir);
  const aside = `${file}.replaced-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  let content: Buffer;
  try {
    const src = await fs.open(file, fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK);
    try {
      const st = await src.stat();
      if (!st.isFile() || st.nlink > 1) throw new AgentError('identity_corrupt', `${file} is not a plain file (a link?): not copied; move it away and run again`);
      content = await src.readFile();
    } finally {
      await src.close();
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (err instanceof AgentError) throw err;
    if (code === 'ELOOP') throw new AgentError('identity_corrupt', `${file} is a symbolic link: not copied; move it away and run again`, { cause: err });
    throw new AgentError('identity_corrupt', `cannot keep a copy of the old identity before the reset: ${(err as Error).message}`, { cause: err });
  }
  try {
    const fh = await fs.open(aside, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
    try {
      await fh.writeFile(content);
      await fh.chmod(0o600);
      // the directory's owner when root (sudo) writes in the service's directory, as the identity is
      const owner = ownerOfDirectory(stateDir);
      if (owner) await fh.chown(owner.uid, owner.gid).catch(() => undefined);
      // on disk before the new identity replaces the old (saveIdentity syncs its own file and the directory): a
      // power cut between the two must not leave only an empty copy of the secret the server still knows
      await fh.sync();
    } finally {
      await fh.close();
    }
    return aside;
  } catch (err) {
    throw new AgentError('identity_corrupt', `cannot keep a copy of the old identity before the reset: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Loads the identity, creating one only when none exists. `reset: true` replaces an existing (or corrupt)
 * identity with a new one: only on the user's explicit request (`--reset-identity`).
 */
export async function ensureIdentity(stateDir: string, opts: { reset?: boolean } = {}): Promise<EnsureIdentityResult> {
  if (!opts.reset) {
    try {
      const r = await loadIdentity(stateDir);
      return { ...r, created: false };
    } catch (err) {
      if (!(err instanceof AgentError) || err.code !== 'identity_missing') throw err;
    }
  }
  const identity = generateIdentity();
  let keptOld: string | undefined;
  if (opts.reset) keptOld = await keepOldIdentity(stateDir);
  await saveIdentity(stateDir, identity);
  return { identity, created: true, cleanedTempFiles: 0, keptOld };
}

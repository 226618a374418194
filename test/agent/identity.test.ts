import { chmod, chown, mkdir, mkdtemp, readFile, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isUuid, MIN_SECRET_LENGTH } from '../../src/protocol/headers.js';
import { AgentError } from '../../src/agent/errors.js';
import { ensureIdentity, fingerprint, identityPath, loadIdentity } from '../../src/agent/identity.js';
import { ROOT, runTs } from '../support/childProcess.js';

const tmp = () => mkdtemp(path.join(os.tmpdir(), 'identity-'));

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(AgentError);
    return (err as AgentError).code;
  }
  throw new Error('expected a rejection');
}

describe('identity', () => {
  it('creates a UUID v4 client id and a >= 43-character secret, stored with mode 0600', async () => {
    const dir = path.join(await tmp(), 'state'); // does not exist yet
    const r = await ensureIdentity(dir);
    expect(r.created).toBe(true);
    expect(isUuid(r.identity.clientId)).toBe(true);
    expect(r.identity.clientId[14]).toBe('4');
    expect(r.identity.clientSecret.length).toBeGreaterThanOrEqual(43);
    expect(r.identity.clientSecret.length).toBeGreaterThanOrEqual(MIN_SECRET_LENGTH);
    expect(r.identity.clientSecret).toMatch(/^[A-Za-z0-9_-]+$/);
    expect((await stat(identityPath(dir))).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(await readFile(identityPath(dir), 'utf8'));
    expect(stored.clientSecret).toBe(r.identity.clientSecret);
  });

  it('two identities never share a secret', async () => {
    const a = await ensureIdentity(await tmp());
    const b = await ensureIdentity(await tmp());
    expect(a.identity.clientSecret).not.toBe(b.identity.clientSecret);
    expect(a.identity.clientId).not.toBe(b.identity.clientId);
  });

  it('never replaces an existing identity unless told to, and keeps the old one aside on reset', async () => {
    const dir = await tmp();
    const first = await ensureIdentity(dir);
    const again = await ensureIdentity(dir);
    expect(again.created).toBe(false);
    expect(again.identity).toEqual(first.identity);
    const reset = await ensureIdentity(dir, { reset: true });
    expect(reset.created).toBe(true);
    expect(reset.identity.clientSecret).not.toBe(first.identity.clientSecret);
    expect(reset.keptOld).toBeDefined();
    expect(JSON.parse(await readFile(reset.keptOld!, 'utf8')).clientSecret).toBe(first.identity.clientSecret);
    expect((await stat(reset.keptOld!)).mode & 0o777).toBe(0o600);
  });

  it('a corrupt identity file is an error naming the recovery, and is not replaced', async () => {
    const dir = await tmp();
    await writeFile(identityPath(dir), '{"clientId": "not-a-uuid", "clientSec', { mode: 0o600 });
    let err: AgentError | undefined;
    try {
      await ensureIdentity(dir);
    } catch (e) {
      err = e as AgentError;
    }
    expect(err?.code).toBe('identity_corrupt');
    expect(err?.message).toMatch(/trust on first use/);
    expect(err?.message).toMatch(/backup/);
    expect(await readFile(identityPath(dir), 'utf8')).toBe('{"clientId": "not-a-uuid", "clientSec');
  });

  it('a too-short secret is corrupt; a missing file is identity_missing', async () => {
    const dir = await tmp();
    expect(await codeOf(loadIdentity(dir))).toBe('identity_missing');
    await writeFile(identityPath(dir), JSON.stringify({ clientId: crypto.randomUUID(), clientSecret: 'short' }));
    expect(await codeOf(loadIdentity(dir))).toBe('identity_corrupt');
  });

  it('fixes a too-open mode to 0600 and says so', async () => {
    const dir = await tmp();
    await ensureIdentity(dir);
    await chmod(identityPath(dir), 0o644);
    const r = await loadIdentity(dir);
    expect(r.fixedMode).toBe(0o644);
    expect((await stat(identityPath(dir))).mode & 0o777).toBe(0o600);
  });

  it('survives a crash while an identity is being rewritten: the old secret is kept, the temp file cleaned', async () => {
    const dir = await tmp();
    const { identity } = await ensureIdentity(dir);
    const replacement = JSON.stringify({ clientId: crypto.randomUUID(), clientSecret: 'x'.repeat(43), createdAt: '' });
    const r = await runTs(path.join(ROOT, 'test/support/crashingIdentityWriter.ts'), [identityPath(dir), replacement]);
    expect(r.signal).toBe('SIGKILL');
    expect((await readdir(dir)).length).toBe(2); // identity.json + the crashed writer's temp file
    const loaded = await loadIdentity(dir);
    expect(loaded.identity).toEqual(identity);
    expect(loaded.cleanedTempFiles).toBe(1);
    expect(await readdir(dir)).toEqual(['identity.json']);
  });

  it('fingerprints are short, stable, and do not contain the secret', () => {
    const s = 'a'.repeat(43);
    expect(fingerprint(s)).toMatch(/^sha256:[0-9a-f]{12}$/);
    expect(fingerprint(s)).toBe(fingerprint(s));
    expect(fingerprint(s)).not.toBe(fingerprint('b'.repeat(43)));
    expect(fingerprint(s)).not.toContain(s.slice(0, 8));
  });
});

describe('enroll --reset-identity as root in the service\'s directory', () => {
  it.skipIf(process.getuid?.() !== 0)("regression (from a review): identity.json replaced by a link to a root-only file was copied through the link and the copy handed to the service user; a link is refused", async () => {
    const tmp = await mkdtemp(path.join(os.tmpdir(), 'id-link-'));
    const dir = path.join(tmp, 'state');
    await mkdir(dir, { mode: 0o700 });
    await chown(dir, 4242, 4243); // /var/lib/speaker-agent: the service user's
    const secret = path.join(tmp, 'shadow');
    await writeFile(secret, 'root:$6$secret-hash:19000:0:99999:7:::\n', { mode: 0o600 });
    await symlink(secret, identityPath(dir));
    const err = await ensureIdentity(dir, { reset: true }).then(() => undefined, (e: unknown) => e as AgentError);
    expect(err).toBeInstanceOf(AgentError);
    expect(err?.code).toBe('identity_corrupt');
    expect(err?.message).toMatch(/symbolic link: not copied/);
    const copies = (await readdir(dir)).filter((n) => n.includes('.replaced-'));
    expect(copies).toEqual([]);
    expect((await stat(secret)).uid).toBe(0);
  });
});

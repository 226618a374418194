import { chown, lstat, mkdir, mkdtemp, readFile, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { adoptDirectoryOwner, adoptDirectoryOwnerTree, cleanAtomicTempFiles, writeFileAtomic } from '../../src/common/atomicFile.js';
import { ROOT, runTs } from '../support/childProcess.js';

const tmp = () => mkdtemp(path.join(os.tmpdir(), 'atomic-'));

describe('writeFileAtomic', () => {
  it('writes the content with mode 0600 and leaves no temp file', async () => {
    const dir = await tmp();
    const f = path.join(dir, 'state.json');
    await writeFileAtomic(f, '{"a":1}');
    expect(await readFile(f, 'utf8')).toBe('{"a":1}');
    expect((await stat(f)).mode & 0o777).toBe(0o600);
    expect(await readdir(dir)).toEqual(['state.json']);
  });

  it('replaces an existing file and narrows a wide mode to 0600', async () => {
    const dir = await tmp();
    const f = path.join(dir, 'state.json');
    await writeFile(f, 'old', { mode: 0o644 });
    await writeFileAtomic(f, 'new');
    expect(await readFile(f, 'utf8')).toBe('new');
    expect((await stat(f)).mode & 0o777).toBe(0o600);
  });

  it('a process killed between writing the temp file and the rename leaves the old file intact', async () => {
    const dir = await tmp();
    const f = path.join(dir, 'identity.json');
    await writeFile(f, 'OLD CONTENT', { mode: 0o600 });
    const r = await runTs(path.join(ROOT, 'test/support/crashingIdentityWriter.ts'), [f, 'NEW CONTENT']);
    expect(r.signal).toBe('SIGKILL');
    expect(r.stdout).not.toContain('not reached');
    // The old file is whole; the crashed writer's temp file (with the complete new content) is left beside it.
    expect(await readFile(f, 'utf8')).toBe('OLD CONTENT');
    const names = await readdir(dir);
    const temps = names.filter((n) => n !== 'identity.json');
    expect(temps).toHaveLength(1);
    expect(temps[0]).toMatch(/^\.identity\.json\.tmp-/);
    expect(await cleanAtomicTempFiles(f)).toBe(1);
    expect(await readdir(dir)).toEqual(['identity.json']);
  });

  it('a failing write removes its temp file and keeps the old content', async () => {
    const dir = await tmp();
    const f = path.join(dir, 'x.json');
    await writeFile(f, 'keep');
    await expect(
      writeFileAtomic(f, 'new', { beforeRename: () => { throw new Error('disk full'); } }),
    ).rejects.toThrow('disk full');
    expect(await readFile(f, 'utf8')).toBe('keep');
    expect(await readdir(dir)).toEqual(['x.json']);
  });
});

describe('adoptDirectoryOwnerTree', () => {
  // as root only (CI is): the directory belongs to a service user
  it.skipIf(process.getuid?.() !== 0)("gives root's entries below a service's directory that directory's owner, and leaves a link (and what it points at) alone", async () => {
    const tmp = await mkdtemp(path.join(os.tmpdir(), 'adopt-'));
    const dir = path.join(tmp, 'data');
    await mkdir(path.join(dir, 'audio/tts'), { recursive: true });
    await writeFile(path.join(dir, 'companion.sqlite'), 'db');
    await writeFile(path.join(dir, 'audio/tts/a.ogg'), 'a');
    await writeFile(path.join(tmp, 'outside'), 'not the service\'s');
    await symlink(path.join(tmp, 'outside'), path.join(dir, 'link'));
    await chown(path.join(dir, 'audio/tts'), 4300, 4301); // already the service's: left as it is
    await chown(dir, 4242, 4243);
    expect(adoptDirectoryOwnerTree(dir)).toBe(3); // audio, companion.sqlite, audio/tts/a.ogg; the link is not opened
    for (const p of ['companion.sqlite', 'audio', 'audio/tts/a.ogg']) {
      const st = await lstat(path.join(dir, p));
      expect({ p, uid: st.uid, gid: st.gid }).toEqual({ p, uid: 4242, gid: 4243 });
    }
    expect((await stat(path.join(dir, 'audio/tts'))).uid).toBe(4300);
    expect((await stat(path.join(tmp, 'outside'))).uid).toBe(0);
    expect((await lstat(path.join(dir, 'link'))).uid).toBe(0);
    expect(adoptDirectoryOwnerTree(dir)).toBe(0); // nothing left to change
    await chown(dir, 0, 0);
    await writeFile(path.join(dir, 'root.txt'), 'r');
    expect(adoptDirectoryOwnerTree(dir)).toBe(0); // root's own directory: nothing to adopt
    expect(adoptDirectoryOwnerTree(path.join(tmp, 'missing'))).toBe(0);
  });
});

describe('adoptDirectoryOwner', () => {
  it.skipIf(process.getuid?.() !== 0)("regression (from a review): a link put where the file was (the service user owns the directory) had its target chowned, /etc/shadow's for instance; a link is left alone", async () => {
    const tmp = await mkdtemp(path.join(os.tmpdir(), 'adopt1-'));
    const dir = path.join(tmp, 'state');
    await mkdir(dir);
    await chown(dir, 4242, 4243);
    await writeFile(path.join(tmp, 'outside'), 'root\'s');
    await symlink(path.join(tmp, 'outside'), path.join(dir, 'identity.json.replaced'));
    adoptDirectoryOwner(path.join(dir, 'identity.json.replaced'), { groupRead: true });
    const outside = await stat(path.join(tmp, 'outside'));
    expect({ uid: outside.uid, mode: outside.mode & 0o777 }).toEqual({ uid: 0, mode: 0o644 });
    // a regular file there does take the directory's owner
    await writeFile(path.join(dir, 'config.json'), '{}', { mode: 0o600 });
    adoptDirectoryOwner(path.join(dir, 'config.json'));
    expect((await stat(path.join(dir, 'config.json'))).uid).toBe(4242);
  });
});

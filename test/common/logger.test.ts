// The log's lines under systemd: each prefixed with its syslog priority when stdout is the journal's stream
// (JOURNAL_STREAM names it), which journald stores as the entry's PRIORITY and strips. A real child process writes
// to a real file whose device and inode are put in JOURNAL_STREAM, as systemd does with its socket; and to a real
// systemd-journald (test/support/journald.ts: Debian's, in a private mount namespace, systemd not being PID 1 here),
// which stores what it makes of the prefix (systemd.exec(5), SyslogLevelPrefix=).
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/logger.js';
import { journaldAvailable, runUnderJournald } from '../support/journald.js';

const LOGGER = path.resolve(import.meta.dirname, '../../src/common/logger.ts');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'logger-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Runs a child that logs one line per level to `destination` (fd 1, or another fd opened on the same file, as
 *  the CLI's stdoutFd() is), its stdout a file; `journal`: JOURNAL_STREAM names that file, another one, or nothing. */
function logTo(name: string, journal: 'this file' | 'another file' | 'unset', destination: 'fd 1' | 'a dup'): string[] {
  const file = path.join(tmp, `${name}.log`);
  const fd = openSync(file, 'w');
  const other = statSync(os.tmpdir());
  const st = statSync(file);
  const env: NodeJS.ProcessEnv = { ...process.env, JOURNAL_STREAM: undefined };
  if (journal === 'this file') env.JOURNAL_STREAM = `${st.dev}:${st.ino}`;
  if (journal === 'another file') env.JOURNAL_STREAM = `${other.dev}:${other.ino}`;
  const dest = destination === 'fd 1' ? '1' : "require('node:fs').openSync('/proc/self/fd/1', 'a')";
  const code = `const { createLogger } = require(${JSON.stringify(LOGGER)});
    const log = createLogger({ level: 'debug', destination: ${dest} });
    log.debug('d'); log.info('i'); log.warn('w'); log.error('e'); log.fatal('f');`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', code], { stdio: ['ignore', fd, 'pipe'], env, encoding: 'utf8' });
  closeSync(fd);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return readFileSync(file, 'utf8').trim().split('\n');
}

describe('createLogger', () => {
  it('prefixes each line with its syslog priority when its stream is the journal\'s (JOURNAL_STREAM)', () => {
    for (const destination of ['fd 1', 'a dup'] as const) {
      const lines = logTo(`journal-${destination.replace(' ', '')}`, 'this file', destination);
      expect(lines.map((l) => l.slice(0, 3))).toEqual(['<7>', '<6>', '<4>', '<3>', '<2>']);
      expect(lines.map((l) => (JSON.parse(l.slice(3)) as { msg: string }).msg)).toEqual(['d', 'i', 'w', 'e', 'f']);
    }
  });

  it.runIf(journaldAvailable())('under a real journald each line is stored with its priority (journalctl -p warning works), its text the JSON line', async () => {
    const code = `const { createLogger } = require(${JSON.stringify(LOGGER)});
      const log = createLogger({ level: 'debug' });
      log.debug('d'); log.info('i'); log.warn({ attempts: 3 }, 'w'); log.error('e'); log.fatal('f');`;
    const r = await runUnderJournald('speaker-agent', [process.execPath, '--import', 'tsx', '-e', code], { ...process.env, JOURNAL_STREAM: undefined }, ['-p', 'warning']);
    expect(r.status, r.stderr).toBe(0);
    const lines = r.entries.filter((e) => e.MESSAGE?.startsWith('{'));
    expect(lines.map((e) => [e.PRIORITY, (JSON.parse(e.MESSAGE!) as { msg: string }).msg])).toEqual([
      ['7', 'd'],
      ['6', 'i'],
      ['4', 'w'],
      ['3', 'e'],
      ['2', 'f'],
    ]);
    expect(JSON.parse(lines[2].MESSAGE!)).toMatchObject({ level: 40, attempts: 3, msg: 'w' }); // the prefix stripped, nothing else
    expect(r.selected.map((e) => (JSON.parse(e.MESSAGE!) as { msg: string }).msg)).toEqual(['w', 'e', 'f']); // journalctl -p warning
  });

  // The bug: the agent logged each function call with a field `name` (the function's), and pino wrote
  // `"name":"speaker-agent",...,"name":"set_device_volume"`; jq and other JSON readers keep the last key, so the line
  // no longer said which process wrote it (found in a soak's log, 1 Dec).
  it('a field named like one of pino\'s own keys is kept under `fields`, not written twice', () => {
    const lines: string[] = [];
    const log = createLogger({ name: 'speaker-agent', destination: { write: (l: string) => void lines.push(l) } });
    log.info({ name: 'set_device_volume', pid: 7, callId: 'c1' }, 'function set_device_volume: Volume is now 40%.');
    log.info({ callId: 'c2' }, 'no clash');
    expect(lines[0].match(/"name":/g)).toHaveLength(2); // the logger's, and the one under fields
    expect(lines[0].match(/"pid":/g)).toHaveLength(2);
    const line = JSON.parse(lines[0]);
    expect(line).toMatchObject({ name: 'speaker-agent', pid: process.pid, callId: 'c1', fields: { name: 'set_device_volume', pid: 7 } });
    expect(JSON.parse(lines[1])).toMatchObject({ name: 'speaker-agent', callId: 'c2' });
    expect(JSON.parse(lines[1]).fields).toBeUndefined();
  });

  it('writes plain JSON lines elsewhere: no JOURNAL_STREAM, or one that names another stream (a redirect)', () => {
    for (const journal of ['unset', 'another file'] as const) {
      const lines = logTo(`plain-${journal.replace(' ', '')}`, journal, 'fd 1');
      expect(lines).toHaveLength(5);
      for (const l of lines) expect(() => JSON.parse(l), l).not.toThrow();
    }
  });
});

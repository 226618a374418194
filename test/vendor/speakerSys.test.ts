// vendor/speaker-sys, the agent's own addon (dup, dup2, a unix datagram send): real file descriptors and a real
// datagram socket; bad arguments are clear errors, never a crash.
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sockaddrUn } from '../../src/common/sdNotify.js';
import { startNotifyReceiver } from '../support/notifySocket.js';

const sys = createRequire(import.meta.url)('speaker-sys') as typeof import('speaker-sys');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'speaker-sys-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('speaker-sys', () => {
  it('dup copies a descriptor; dup2 redirects one onto another', () => {
    const a = openSync(path.join(tmp, 'a.txt'), 'w');
    const b = openSync(path.join(tmp, 'b.txt'), 'w');
    const copyOfA = sys.dup(a);
    expect(copyOfA).toBeGreaterThan(2);
    writeSync(copyOfA, 'via the copy\n');
    sys.dup2(a, b); // b now writes to a.txt
    writeSync(b, 'via b\n');
    for (const fd of [a, b, copyOfA]) closeSync(fd);
    expect(readFileSync(path.join(tmp, 'a.txt'), 'utf8')).toBe('via the copy\nvia b\n');
    expect(readFileSync(path.join(tmp, 'b.txt'), 'utf8')).toBe('');
  });

  it('a bad descriptor is an Error with code EBADF; wrong argument types are TypeErrors', () => {
    expect(() => sys.dup(987_654)).toThrow(expect.objectContaining({ code: 'EBADF' }));
    expect(() => sys.dup2(987_654, 987_655)).toThrow(expect.objectContaining({ code: 'EBADF' }));
    // @ts-expect-error wrong type on purpose
    expect(() => sys.dup('1')).toThrow(TypeError);
    // @ts-expect-error missing argument on purpose
    expect(() => sys.dup2(1)).toThrow(TypeError);
    // @ts-expect-error wrong type on purpose
    expect(() => sys.sendDatagram('x', 3, Buffer.from('m'))).toThrow(TypeError);
    expect(() => sys.sendDatagram(Buffer.alloc(110), 500, Buffer.from('m'))).toThrow(RangeError);
    // @ts-expect-error wrong type on purpose
    expect(() => sys.captureAlsaXruns('yes')).toThrow(/captureAlsaXruns\(printThem: boolean\)/);
  });

  it('sendDatagram delivers to a bound socket, and returns -ENOENT (not a throw) when none is there', async () => {
    const address = path.join(tmp, 'rx.sock');
    const rx = await startNotifyReceiver(address);
    try {
      const { addr, len } = sockaddrUn(address);
      expect(sys.sendDatagram(addr, len, Buffer.from('HELLO=1'))).toBe(0);
      expect(await rx.waitFor((m) => m === 'HELLO=1', 5000)).toBe('HELLO=1');
    } finally {
      rx.close();
    }
    const missing = sockaddrUn(path.join(tmp, 'nobody.sock'));
    expect(sys.sendDatagram(missing.addr, missing.len, Buffer.from('X=1'))).toBe(-2);
  });
});

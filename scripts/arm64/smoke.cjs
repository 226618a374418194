// Step 4 of scripts/check-arm64.sh, run by the target's node under qemu-user-static (qemu-aarch64, qemu-arm):
//   node smoke.cjs SCRATCH OPUS_NODE [ARCH KOFFI_NODE]     ARCH: process.arch expected (arm64, arm); default arm64
// Loads every cross-built addon of SCRATCH by its file (not through the packages' fallbacks, which would hide a
// binary that does not load) and exercises it once. Prints one line per addon; exit 1 on the first failure.
// CommonJS, and nothing but node's built-ins and SCRATCH: it must run on the bare node of the target.
'use strict';
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const [work, opusFile, arch = 'arm64', koffiFile] = process.argv.slice(2);
const nm = path.join(work, 'node_modules');
assert.equal(process.arch, arch, `this must run on the ${arch} node, not ${process.arch}`);

function check(name, fn) {
  const t = process.hrtime.bigint();
  let detail;
  try {
    detail = fn();
  } catch (e) {
    console.error(`smoke: ${name} FAILED: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  }
  console.log(`smoke: ${name} ok (${(Number(process.hrtime.bigint() - t) / 1e6).toFixed(0)} ms): ${detail}`);
}

const rms = (pcm) => {
  let s = 0;
  for (let i = 0; i < pcm.length; i++) s += pcm[i] * pcm[i];
  return Math.sqrt(s / pcm.length);
};

check('opus', () => {
  const { OpusEncoder } = require(opusFile);
  const rate = 48000;
  const samples = rate / 50; // 20 ms
  const enc = new OpusEncoder(rate, 2);
  let packet;
  let decoded;
  let input;
  // A few frames of a 440 Hz tone: the decoder's output settles after the codec's look-ahead.
  for (let f = 0; f < 5; f++) {
    input = new Int16Array(samples * 2);
    for (let i = 0; i < samples; i++) {
      const v = Math.round(8000 * Math.sin((2 * Math.PI * 440 * (f * samples + i)) / rate));
      input[2 * i] = v;
      input[2 * i + 1] = v;
    }
    packet = enc.encode(Buffer.from(input.buffer));
    decoded = enc.decode(packet);
  }
  assert.ok(packet.length > 0 && packet.length < samples * 4, `packet of ${packet.length} bytes`);
  assert.equal(decoded.length, samples * 4, 'one decoded 20 ms stereo frame');
  const out = new Int16Array(decoded.buffer, decoded.byteOffset, decoded.length / 2);
  const ratio = rms(out) / rms(input);
  assert.ok(ratio > 0.7 && ratio < 1.3, `decoded level ${ratio.toFixed(2)} of the input's`);
  return `20 ms stereo frame -> ${packet.length} bytes -> ${decoded.length} bytes, level ${ratio.toFixed(2)} of the input`;
});

check('better-sqlite3', () => {
  const Database = require(path.join(nm, 'better-sqlite3'));
  const db = new Database(':memory:', { nativeBinding: path.join(nm, 'better-sqlite3/build/Release/better_sqlite3.node') });
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
  const ins = db.prepare('INSERT INTO t (v) VALUES (?)');
  db.transaction(() => {
    for (let i = 0; i < 1000; i++) ins.run(`row ${i}`);
  })();
  const row = db.prepare("SELECT count(*) AS n, sum(id) AS s, max(v) AS m, sqlite_version() AS ver FROM t WHERE v LIKE 'row %'").get();
  assert.deepEqual([row.n, row.s, row.m], [1000, 500500, 'row 999']);
  db.close();
  return `in-memory table: 1000 rows, sum 500500 (SQLite ${row.ver})`;
});

check('naudiodon2 (PortAudio)', () => {
  const addon = path.join(nm, 'naudiodon2/build/Release/naudiodon.node');
  require(addon); // the file itself first: index.js finds it through `bindings`
  const pa = require(path.join(nm, 'naudiodon2'));
  const apis = pa.getHostAPIs();
  const devices = pa.getDevices();
  const names = apis.HostAPIs.map((a) => a.name);
  // The addon's own host API table (vendor/naudiodon2/PATCHES.md item 13): ALSA only.
  assert.deepEqual(names, ['ALSA'], `host APIs ${names.join(', ')}`);
  assert.ok(Array.isArray(devices));
  return `host APIs [${names.join(', ')}], ${devices.length} device(s)${devices.length ? ': ' + devices.map((d) => d.name).join(', ') : ' (no sound card here)'}`;
});

check('koffi', () => {
  if (koffiFile) require(koffiFile); // the prebuilt binary itself first: koffi's index.js would try others
  const koffi = require(path.join(nm, 'koffi'));
  const libc = koffi.load('libc.so.6');
  const getpid = libc.func('int getpid()');
  const strlen = libc.func('size_t strlen(const char *s)');
  assert.equal(getpid(), process.pid);
  assert.equal(Number(strlen('arm64 speaker')), 13);
  return `libc.so.6 loaded, getpid() = process.pid, strlen ok (koffi ${koffi.version})`;
});

check('speaker-sys', () => {
  const sys = require(path.join(nm, 'speaker-sys/build/Release/speaker_sys.node'));
  const fd = sys.dup(1);
  assert.ok(fd >= 3, `dup(1) = ${fd}`);
  const devnull = fs.openSync('/dev/null', 'w');
  sys.dup2(devnull, fd);
  fs.writeSync(fd, 'into /dev/null\n');
  fs.closeSync(fd);
  fs.closeSync(devnull);
  assert.throws(() => sys.dup(100000), (e) => e.code === 'EBADF');

  // sd_notify's datagram, received on a socket made through koffi (node has no AF_UNIX datagram sockets).
  const koffi = require(path.join(nm, 'koffi'));
  const libc = koffi.load('libc.so.6');
  const socket = libc.func('int socket(int domain, int type, int protocol)');
  const bind = libc.func('int bind(int fd, const void *addr, uint32_t len)');
  const recv = libc.func('intptr_t recv(int fd, _Out_ uint8_t *buf, size_t len, int flags)');
  const close = libc.func('int close(int fd)');
  const sockPath = path.join(work, 'notify.sock');
  const addr = Buffer.alloc(110);
  addr.writeUInt16LE(1, 0); // AF_UNIX
  addr.write(sockPath, 2);
  const addrLen = 2 + Buffer.byteLength(sockPath) + 1;
  const s = socket(1, 2 | 0o4000, 0); // SOCK_DGRAM | SOCK_NONBLOCK
  assert.ok(s >= 0, 'socket()');
  assert.equal(bind(s, addr, addrLen), 0, 'bind()');
  assert.equal(sys.sendDatagram(addr, addrLen, Buffer.from('READY=1')), 0);
  const buf = Buffer.alloc(64);
  const n = Number(recv(s, buf, buf.length, 0));
  close(s);
  fs.rmSync(sockPath);
  assert.equal(buf.subarray(0, Math.max(0, n)).toString(), 'READY=1');
  const trimmed = sys.mallocTrim();
  assert.equal(typeof trimmed, 'boolean');
  // alsa-lib's error handler, on the libasound naudiodon2 loaded above (the check before this one)
  assert.equal(sys.captureAlsaXruns(false), true, 'alsa-lib error handler not set');
  assert.deepEqual(sys.alsaXruns(), { underruns: 0, overruns: 0 });

  const v8 = require(path.join(nm, 'speaker-sys/build/Release/speaker_sys_v8.node'));
  v8.memoryPressure();

  const gcm = require(path.join(nm, 'speaker-sys/build/Release/speaker_sys_srtp.node'));
  const key = crypto.randomBytes(16);
  const iv = crypto.randomBytes(12);
  const aad = crypto.randomBytes(12);
  const plain = crypto.randomBytes(160);
  const ctx = gcm.gcmContext(key);
  const sealed = gcm.gcmSeal(ctx, iv, aad, plain);
  const c = crypto.createCipheriv('aes-128-gcm', key, iv);
  c.setAAD(aad);
  const expected = Buffer.concat([aad, c.update(plain), c.final(), c.getAuthTag()]);
  assert.ok(sealed.equals(expected), "gcmSeal differs from node's crypto");
  assert.ok(gcm.gcmOpen(ctx, iv, sealed, aad.length).equals(Buffer.concat([aad, plain])));
  sealed[sealed.length - 1] ^= 1;
  assert.equal(gcm.gcmOpen(ctx, iv, sealed, aad.length), null);
  return `dup/dup2, sd_notify datagram received (READY=1), mallocTrim() = ${trimmed}, alsa-lib error handler set, memoryPressure(), AES-128-GCM equal to node's crypto and a forged tag refused`;
});

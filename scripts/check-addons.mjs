#!/usr/bin/env node
// Loads every native part the agent and the companion use, in the node that runs this script, and uses each
// once. scripts/setup.sh runs it after `npm ci` so a wrong build fails at set-up with a way to fix it, not at the
// first call (e.g. addons compiled against another Node's headers: "NODE_MODULE_VERSION 115 ... requires 137").
//   node scripts/check-addons.mjs           one line per addon; exit 1 when one does not load or work
//   node scripts/check-addons.mjs --failed  only the npm package names that failed, one per line (for npm rebuild)
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(ROOT, 'package.json'));
const major = Number(process.versions.node.split('.')[0]);

/** [npm package, what it is for, check] — a check throws when the addon does not load or work. */
const CHECKS = [
  ['@discordjs/opus', 'Opus both ways', () => {
    const { OpusEncoder } = require('@discordjs/opus');
    const enc = new OpusEncoder(48000, 1);
    const packet = enc.encode(Buffer.alloc(960 * 2));
    if (enc.decode(packet).length !== 960 * 2) throw new Error('a 20 ms frame did not decode to 960 samples');
  }],
  ['naudiodon2', 'microphone and speaker (PortAudio)', () => {
    const pa = require('naudiodon2');
    if (typeof pa.AudioIO !== 'function') throw new Error('AudioIO missing');
  }],
  ['speaker-sys', 'sd_notify, dup2, malloc_trim, SRTP AES-GCM, node preload', () => {
    const sys = require('speaker-sys');
    for (const f of ['dup', 'dup2', 'sendDatagram', 'mallocTrim']) if (typeof sys[f] !== 'function') throw new Error(`${f} missing`);
    // optional parts: without them werift keeps node's crypto and the memory keeper uses gc()
    // the library the systemd units preload into node (src/node_preload.c): it must load into this node (a missing
    // or foreign one makes ld.so print an error in every process the service starts). Loaded in this process, not
    // by starting another node: under qemu-user (scripts/check-arm64.sh) a child process cannot start.
    let preload;
    try {
      preload = require('koffi').load(sys.nodePreloadPath);
    } catch (err) {
      throw new Error(`${sys.nodePreloadPath}: ${err.message}`);
    }
    // whether its constructor found abseil's switch in this node (Node 22 and later; Node 24+ need it)
    const found = preload.func('int speaker_sys_node_preload_switched_off()')() === 1;
    const extras = [sys.srtpGcm ? 'SRTP in OpenSSL' : 'no native SRTP', sys.memoryPressure ? 'V8 memory pressure' : 'no V8 memory pressure',
      found ? "abseil's switch found" : 'no abseil in this node'];
    return extras.join(', ');
  }],
  ['onnxruntime-node', 'the wake word engine (openWakeWord)', () => {
    // prebuilt in the npm package for linux-x64 and linux-arm64 only; elsewhere the agent uses pocketsphinx
    if (!['x64', 'arm64'].includes(process.arch)) return `no build for ${process.arch}: the wake word engine is pocketsphinx here`;
    process.env.ORT_DISABLE_TELEMETRY = '1'; // as the agent does (README, The wake word engine)
    const ort = require('onnxruntime-node');
    if (typeof ort.InferenceSession?.create !== 'function') throw new Error('InferenceSession missing');
  }],
  ['koffi', 'espeak-ng and pocketsphinx (FFI)', () => {
    const koffi = require('koffi');
    const getpid = koffi.load('libc.so.6').func('int getpid()');
    if (getpid() !== process.pid) throw new Error('getpid through koffi disagrees');
  }],
];
// The companion's store: node:sqlite from Node 24 (src/companion/db/sqlite.ts says why), better-sqlite3 before.
if (major >= 24) {
  CHECKS.push(['node:sqlite', 'the companion store (built into Node)', () => {
    const { DatabaseSync } = require('node:sqlite');
    new DatabaseSync(':memory:').prepare('SELECT 1').get();
  }]);
} else {
  CHECKS.push(['better-sqlite3', 'the companion store', () => {
    const Database = require('better-sqlite3');
    new Database(':memory:').prepare('SELECT 1').get();
  }]);
}

// Debian's npm builds addons with Debian's node-gyp, which links them to Debian's shared libnode: in any other
// Node such an addon loads a second Node runtime into the process, which crashes at exit (seen: Debian 12, Debian's
// npm 9 with Node 24 from `npm install -g node@24`). A node that is itself Debian's (node_shared) maps libnode anyway.
const ownLibnode = process.config.variables.node_shared === true;
const libnodeMapped = () => !ownLibnode && /\/libnode\.so[.\d]*$/m.test(readFileSync('/proc/self/maps', 'utf8'));

const failed = [];
const onlyFailed = process.argv.includes('--failed');
for (const [pkg, what, check] of CHECKS) {
  try {
    const before = libnodeMapped();
    const note = check();
    if (!before && libnodeMapped()) {
      throw new Error("it is linked to Debian's libnode (another Node runtime): built by Debian's npm and node-gyp, not for this Node");
    }
    if (!onlyFailed) console.log(`ok      ${pkg.padEnd(16)} ${what}${note ? ` (${note})` : ''}`);
  } catch (err) {
    const msg = String(err?.message ?? err).split('\n')[0];
    const abi = /NODE_MODULE_VERSION (\d+)/.exec(String(err?.message))?.[1];
    failed.push(pkg);
    if (!onlyFailed) {
      console.log(`FAILED  ${pkg.padEnd(16)} ${what}: ${msg}`);
      if (abi) console.log(`        built for another Node (ABI ${abi}); this is Node ${process.version} (ABI ${process.versions.modules})`);
    }
  }
}
if (onlyFailed) console.log(failed.filter((p) => !p.startsWith('node:')).join('\n'));
process.exit(failed.length ? 1 : 0);

#!/usr/bin/env node
// Small, checked source patches to installed dependencies (run by `npm ci` as postinstall, and by setup.sh).
//
// Why patches and not forks: each is a few characters in a pinned version (package.json pins werift exactly), for
// something that costs a speaker memory or CPU all day, and each says why. A patch whose original text is not
// found fails the install loudly, so a version bump cannot silently drop one; running twice changes nothing.
// test/scripts/patchDependencies.test.ts checks the installed tree carries every patch.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** @type {Array<{ file: string; why: string; from: string; to: string }>} (`to` never contains `from`: the test
 *  checks no original code is left) */
export const PATCHES = [
  {
    file: 'node_modules/werift/lib/index.mjs', // the ES module build, what import 'werift' loads
    why:
      'ICE host candidates are sorted by interface name with localeCompare, which starts ICU collation and maps ' +
      '~3 MB of locale data into the agent for the rest of its life; interface names are ASCII, a plain ' +
      'comparison orders them the same.',
    from: 'all.sort((a, b) => a.nic.localeCompare(b.nic));',
    to: 'all.sort((a, b) => (a.nic < b.nic ? -1 : a.nic > b.nic ? 1 : 0)); // speaker-agent patch: no ICU collation',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'SRTP AES-GCM (what werift negotiates first): werift builds a node crypto cipher per RTP packet, and the key ' +
      'import plus five calls through node\'s JS crypto layer cost about a point of a core in a call. ' +
      'speaker-sys\'s srtpGcm reuses one OpenSSL context per key and makes one call per packet (src/srtp_gcm.c). ' +
      'When that addon could not load, srtpGcm is undefined and werift\'s own code below runs.',
    from: 'import { createCipheriv as createCipheriv3, createDecipheriv as createDecipheriv3 } from "crypto";\n',
    to:
      'import { createCipheriv as createCipheriv3, createDecipheriv as createDecipheriv3 } from "crypto"; // and:\n' +
      'import speakerAgentSys from "speaker-sys"; // speaker-agent patch: native SRTP AES-GCM (scripts/patch-dependencies.mjs)\n' +
      'const speakerAgentGcm = speakerAgentSys.srtpGcm;\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why: 'SRTP AES-GCM encryption through speaker-sys (see the import patch above).',
    from:
      '    const iv = this.rtpInitializationVector(header, rolloverCounter);\n' +
      '    const cipher = createCipheriv3("aes-128-gcm", this.srtpSessionKey, iv);\n',
    to:
      '    const iv = this.rtpInitializationVector(header, rolloverCounter);\n' +
      '    if (speakerAgentGcm) return speakerAgentGcm.gcmSeal(this.speakerAgentRtpKey ??= speakerAgentGcm.gcmContext(this.srtpSessionKey), iv, hdr, payload); // speaker-agent patch\n' +
      '    const cipher = createCipheriv3("aes-128-gcm", this.srtpSessionKey, iv);\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why: 'SRTP AES-GCM decryption through speaker-sys; a packet that does not authenticate is the same SrtpAuthenticationError.',
    from:
      '  decryptRtp(cipherText, rolloverCounter, header = parseSrtpRtpHeader(cipherText, this.aeadAuthTagLen)) {\n',
    to:
      '  decryptRtp(cipherText, rolloverCounter, header = parseSrtpRtpHeader(cipherText, this.aeadAuthTagLen)) { // speaker-agent patch\n' +
      '    if (speakerAgentGcm) {\n' +
      '      const dst = speakerAgentGcm.gcmOpen(this.speakerAgentRtpKey ??= speakerAgentGcm.gcmContext(this.srtpSessionKey), this.rtpInitializationVector(header, rolloverCounter), cipherText, header.payloadOffset);\n' +
      '      if (dst === null) throw new SrtpAuthenticationError("Failed to authenticate SRTP packet");\n' +
      '      return [dst, finalizeSrtpRtpHeader(header, dst, "Failed to authenticate SRTP packet")];\n' +
      '    }\n',
  },
];

/** Applies every patch under `base`; returns what it did per file. Throws when a file matches neither side. */
export function applyPatches(base = root) {
  const report = [];
  for (const p of PATCHES) {
    const file = path.join(base, p.file);
    const text = readFileSync(file, 'utf8'); // a missing file is an error too: the package changed its layout
    if (text.includes(p.to)) {
      report.push({ file: p.file, state: 'already patched' });
      continue;
    }
    const at = text.indexOf(p.from);
    if (at < 0 || text.indexOf(p.from, at + 1) >= 0) {
      throw new Error(`patch-dependencies: ${p.file} does not contain the expected code exactly once; ` +
        `the dependency changed, re-check the patch (${p.why})`);
    }
    writeFileSync(file, text.slice(0, at) + p.to + text.slice(at + p.from.length));
    report.push({ file: p.file, state: 'patched' });
  }
  return report;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const r of applyPatches()) if (r.state === 'patched') console.log(`patched ${r.file}`);
}

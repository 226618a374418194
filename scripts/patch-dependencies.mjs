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

/** @type {Array<{ file: string; why: string; from: string; to: string }>} */
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

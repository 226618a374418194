// Step 3 of scripts/check-arm64.sh: inspects cross-built addons without running them.
//   node scripts/arm64/inspect.mjs [--arch arm64|armhf] --sysroot DIR --node NODE --tree SCRATCH --link-map MAP name=file.node...
// For each addon: a shared object of the target (arm64: AArch64 ELF64; armhf: ARM ELF32, EABI version 5, hard-float
// ABI, as Debian's and Raspberry Pi OS's armhf); every library it NEEDs found in the arm64 sysroot (RUNPATH $ORIGIN
// honoured); every undefined symbol (not weak) defined, with the same symbol version, by those libraries, what they
// need in turn, or the arm64 node binary and its libraries (node exports N-API, V8, libuv and OpenSSL to addons).
// naudiodon2 also: PortAudio inside the addon (linked from the sysroot's Debian libportaudio.a, as the linker's
// map MAP shows, without its JACK and OSS host APIs), no libportaudio NEEDED, no RPATH/RUNPATH, and no PortAudio
// binary anywhere in SCRATCH.
// Also: every .node file in SCRATCH is of the target (no host binary left in the tree). Exit 1 on any failure.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  if (i < 0 && dflt !== undefined) return dflt;
  if (i < 0 || i + 1 >= args.length) throw new Error(`missing ${name}`);
  return args.splice(i, 2)[1];
};
const TARGETS = {
  arm64: { triplet: 'aarch64-linux-gnu', machine: 'AArch64', elfClass: 'ELF64', flags: [] },
  // EABI5 and the hard-float calling convention (VFP registers): what armhf's libraries and node are built for
  armhf: { triplet: 'arm-linux-gnueabihf', machine: 'ARM', elfClass: 'ELF32', flags: ['Version5 EABI', 'hard-float ABI'] },
};
const target = TARGETS[opt('--arch', 'arm64')];
if (!target) throw new Error('--arch must be arm64 or armhf');
const READELF = `${target.triplet}-readelf`;
const sysroot = opt('--sysroot');
const nodeBin = opt('--node');
const tree = opt('--tree');
const linkMap = opt('--link-map');
const addons = args.map((a) => {
  const i = a.indexOf('=');
  return { name: a.slice(0, i), file: a.slice(i + 1) };
});

const failures = [];
const fail = (msg) => failures.push(msg);
const readelf = (...a) => execFileSync(READELF, ['-W', ...a], { encoding: 'utf8', maxBuffer: 256 << 20 });

function header(file) {
  const out = readelf('-h', file);
  const field = (k) => new RegExp(`^\\s*${k}:\\s*(.*)$`, 'm').exec(out)?.[1].trim() ?? '';
  return { class: field('Class'), machine: field('Machine'), type: field('Type'), flags: field('Flags') };
}

function dynamic(file) {
  const out = readelf('-d', file);
  const needed = [...out.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]);
  const runpath = [...out.matchAll(/\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[([^\]]*)\]/g)].map((m) => m[1]);
  return { needed, runpath };
}

// readelf --dyn-syms lines: "Num: Value Size Type Bind Vis Ndx Name", Name as foo, foo@VER (n) or foo@@VER.
function dynSyms(file) {
  const defined = new Set();
  const undefinedStrong = [];
  let weakUndefined = 0;
  for (const line of readelf('--dyn-syms', file).split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 8 || !/^\d+:$/.test(f[0])) continue;
    const [, , , type, bind, , ndx, rawName] = f;
    if (!rawName || type === 'SECTION' || type === 'FILE') continue;
    const name = rawName.replace(/@@/, '@');
    if (ndx === 'UND') {
      if (bind === 'WEAK') weakUndefined++;
      else undefinedStrong.push(name);
    } else {
      defined.add(name);
      defined.add(name.split('@')[0]);
    }
  }
  return { defined, undefinedStrong, weakUndefined };
}

const LIB_DIRS = [`usr/lib/${target.triplet}`, `lib/${target.triplet}`, 'usr/lib', 'lib'].map((d) => path.join(sysroot, d));
function findLib(soname, runpath, origin) {
  const dirs = [...runpath.flatMap((r) => r.split(':')).map((r) => r.replace(/\$ORIGIN|\$\{ORIGIN\}/g, origin)), ...LIB_DIRS];
  for (const d of dirs) {
    const p = path.join(d, soname);
    if (existsSync(p)) return p;
  }
  return undefined;
}

// The libraries an object brings into the process, transitively: [{ soname, file }].
function closure(file, seen = new Map()) {
  const { needed, runpath } = dynamic(file);
  for (const soname of needed) {
    if (seen.has(soname)) continue;
    const lib = findLib(soname, runpath, path.dirname(file));
    seen.set(soname, lib);
    if (lib) closure(lib, seen);
  }
  return seen;
}

const symCache = new Map();
const symsOf = (file) => symCache.get(file) ?? symCache.set(file, dynSyms(file)).get(file);

// What the arm64 node process already provides to every addon it loads.
const h = header(nodeBin);
if (h.machine !== target.machine) fail(`node ${nodeBin}: machine ${h.machine}`);
for (const f of target.flags) if (!h.flags.includes(f)) fail(`node ${nodeBin}: flags ${h.flags} (not ${f})`);
const nodeScope = [['node', nodeBin], ...closure(nodeBin)];
for (const [soname, lib] of nodeScope) if (!lib) fail(`node: ${soname} not found in the sysroot`);

for (const { name, file } of addons) {
  if (!existsSync(file)) {
    fail(`${name}: ${file} missing`);
    continue;
  }
  const hd = header(file);
  const problems = [];
  if (hd.machine !== target.machine) problems.push(`machine ${hd.machine}`);
  if (!hd.class.includes(target.elfClass)) problems.push(`class ${hd.class}`);
  for (const f of target.flags) if (!hd.flags.includes(f)) problems.push(`flags ${hd.flags} (not ${f})`);
  if (!hd.type.startsWith('DYN')) problems.push(`type ${hd.type}`);
  const { needed, runpath } = dynamic(file);
  const libs = closure(file);
  for (const [soname, lib] of libs) if (!lib) problems.push(`NEEDED ${soname} not in the sysroot`);
  for (const [soname, lib] of libs) {
    if (!lib) continue;
    const lh = header(lib);
    if (lh.machine !== target.machine) problems.push(`${soname} (${lib}) is ${lh.machine}`);
    for (const f of target.flags) if (!lh.flags.includes(f)) problems.push(`${soname} (${lib}) flags ${lh.flags}`);
  }

  // Resolve each strong undefined symbol against the whole scope: node first (it is loaded first), then libraries.
  const scope = [...nodeScope, ['(self)', file], ...libs].filter(([, f]) => f);
  const { undefinedStrong, weakUndefined } = symsOf(file);
  const byProvider = new Map();
  const unresolved = [];
  for (const sym of undefinedStrong) {
    const provider = scope.find(([, f]) => symsOf(f).defined.has(sym));
    if (provider) byProvider.set(provider[0], (byProvider.get(provider[0]) ?? 0) + 1);
    else unresolved.push(sym);
  }
  const glibc = undefinedStrong.map((x) => /@GLIBC_([\d.]+)$/.exec(x)?.[1]).filter(Boolean);
  const newestGlibc = glibc.sort((a, b) => a.localeCompare(b, 'en', { numeric: true })).at(-1) ?? '-';
  if (unresolved.length) problems.push(`${unresolved.length} unresolved symbol(s): ${unresolved.slice(0, 20).join(' ')}`);

  if (name === 'naudiodon2') {
    if (needed.some((n) => /portaudio/i.test(n))) problems.push(`NEEDs a shared PortAudio: ${needed.join(' ')}`);
    if (runpath.length) problems.push(`RPATH/RUNPATH ${runpath.join(' ')} (a bundled library's directory)`);
    const symtab = readelf('-s', file);
    if (!/\bFUNC\s+\S+\s+\S+\s+\d+\s+Pa_Initialize$/m.test(symtab)) problems.push('Pa_Initialize not defined inside the addon');
    if (symsOf(file).defined.has('Pa_Initialize')) problems.push('PortAudio symbols exported (--exclude-libs missing)');
    // "Archive member included to satisfy reference by file (symbol)": one line per member, archive(member.o).
    const map = readFileSync(linkMap, 'utf8');
    const taken = [...map.matchAll(/^(\S*libportaudio\.a)\(([^)]+)\)/gm)];
    const archives = [...new Set(taken.map((m) => realpathSync(m[1])))];
    const members = [...new Set(taken.map((m) => m[2]))];
    const want = realpathSync(path.join(sysroot, `usr/lib/${target.triplet}/libportaudio.a`));
    if (archives.length !== 1 || archives[0] !== want) problems.push(`PortAudio linked from ${archives.join(', ') || 'nowhere'} (expected ${want})`);
    if (members.some((m) => /jack|oss|hostapis/.test(m))) problems.push(`Debian's host API table or JACK/OSS linked in: ${members.join(' ')}`);
    console.log(`inspect: naudiodon2 PortAudio from ${archives.join(', ')} (${members.length} objects: ${members.join(' ')})`);
  }

  if (problems.length) fail(`${name} (${file}): ${problems.join('; ')}`);
  const providers = [...byProvider].map(([p, n]) => `${p} ${n}`).join(', ');
  console.log(
    `inspect: ${name} ${hd.machine} ${hd.class}${target.flags.length ? ` ${target.flags.filter((f) => hd.flags.includes(f)).join(', ')}` : ''}; NEEDED ${needed.join(' ') || '-'}${runpath.length ? `; RUNPATH ${runpath.join(':')}` : ''}; ` +
      `glibc >= ${newestGlibc}; ${undefinedStrong.length} undefined symbols ${unresolved.length ? `(${unresolved.length} UNRESOLVED)` : 'all resolved'} (${providers}; ${weakUndefined} weak)` +
      (problems.length ? ' FAIL' : ' ok'),
  );
}

// No host (or other-architecture) binary left in the scratch tree, and no PortAudio shipped with a package.
function walk(dir, out = []) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (e.isFile()) out.push(p);
  }
  return out;
}
const files = walk(tree);
const nodeFiles = files.filter((f) => f.endsWith('.node') && !f.includes('/obj.target/'));
for (const f of nodeFiles) {
  const fh = header(f);
  if (fh.machine !== target.machine) fail(`${path.relative(tree, f)} is ${fh.machine}`);
  for (const fl of target.flags) if (!fh.flags.includes(fl)) fail(`${path.relative(tree, f)} flags ${fh.flags} (not ${fl})`);
}
const portaudioBinaries = files.filter((f) => /libportaudio/i.test(path.basename(f)) && statSync(f).size > 0);
if (portaudioBinaries.length) fail(`PortAudio binaries in the tree: ${portaudioBinaries.map((f) => path.relative(tree, f)).join(' ')}`);
console.log(`inspect: ${nodeFiles.length} .node files in the scratch tree, all ${target.machine}; no PortAudio binary shipped in it`);

if (failures.length) {
  for (const f of failures) console.error(`inspect: FAIL ${f}`);
  process.exit(1);
}

#!/usr/bin/env node
// `npm run build`: bundles the CLI (agent, companion server, everything they import) into dist/ with esbuild.
//
// Why a bundle and not tsc's one-file-per-module output: on a Pi the agent's start-up was dominated by Node's
// module loader (resolving, reading and linking ~900 files of werift, zod, conf, fastify ...: ~0.8 s of a
// 1.7 s start on this machine's x86 cores, more on a Pi). One file loads in a fraction of that and keeps less
// in memory. Type checking is `npm run typecheck` (and part of `npm test`).
//
// What stays outside the bundle: the native addons (and the JS that locates their .node files next to
// themselves), resolved from node_modules at run time. Child processes and worker threads are separate entry
// points written flat into dist/, so `new URL('./<name>.js', import.meta.url)` finds them from the bundle.
import { build } from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Packages replaced by a stub in the bundle: dependencies of our dependencies that our code never reaches, but
 * that would otherwise be loaded (and kept in memory) by every process. Each stub says why it is safe.
 */
export const STUBBED_PACKAGES = {
  '@peculiar/x509': path.join(root, 'scripts/bundle-stubs/peculiar-x509.mjs'),
};

/** Native addons: loaded from node_modules, never bundled. */
export const NATIVE_PACKAGES = ['naudiodon2', '@discordjs/opus', 'better-sqlite3', 'koffi', 'speaker-sys', 'onnxruntime-node'];

/**
 * Entry points: the CLI, and every <name>Worker.ts under src (what a child process or worker thread runs) as
 * dist/<name>Worker.js, which the code starts with new URL('./<name>Worker.js', import.meta.url).
 */
export function entryPoints() {
  const entries = { 'speaker-agent': 'src/cli/main.ts' };
  for (const file of readdirSync(path.join(root, 'src'), { recursive: true })) {
    const m = /(?:^|\/)(\w+Worker)\.ts$/.exec(String(file));
    if (!m) continue;
    if (entries[m[1]]) throw new Error(`two worker entry points are named ${m[1]}: rename one (dist/ is flat)`);
    entries[m[1]] = path.join('src', String(file));
  }
  return entries;
}

/** Writes the bundle to outdir (inside the project, so node_modules resolves); extra entries: { name: file }. */
export async function bundle({ outdir = path.join(root, 'dist'), quiet = false, extraEntryPoints = {} } = {}) {
  rmSync(outdir, { recursive: true, force: true });
  const entries = { ...entryPoints(), ...extraEntryPoints };
  const result = await build({
    absWorkingDir: root,
    entryPoints: Object.fromEntries(Object.entries(entries).map(([name, file]) => [name, path.resolve(root, file)])),
    outdir,
    bundle: true,
    platform: 'node',
    format: 'esm',
    // Code reached only through import() (the companion server, the agent's call code, each CLI command) goes
    // into its own chunk, loaded when used: the agent never parses the companion's code or loads SQLite.
    splitting: true,
    chunkNames: '[name]-[hash]', // flat: new URL('./<name>Worker.js', import.meta.url) must work from any chunk
    target: 'node20',
    external: NATIVE_PACKAGES,
    // CommonJS dependencies call require() for Node's built-ins; an ES module has no require of its own.
    banner: { js: "import { createRequire as __speakerAgentRequire } from 'node:module'; const require = __speakerAgentRequire(import.meta.url);" },
    // Whitespace and syntax only: identifiers keep their names, so stack traces in the journal stay readable.
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'eof',
    logLevel: quiet ? 'error' : 'warning',
    metafile: true,
    plugins: [
      {
        name: 'stub-unreached-packages',
        setup(b) {
          const names = Object.keys(STUBBED_PACKAGES).map((n) => n.replace(/[/.]/g, '\\$&'));
          b.onResolve({ filter: new RegExp(`^(${names.join('|')})$`) }, (args) => ({ path: STUBBED_PACKAGES[args.path] }));
        },
      },
    ],
  });
  return result;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const t0 = performance.now();
  const result = await bundle();
  const outputs = Object.entries(result.metafile.outputs).map(([f, o]) => `${path.relative(root, f)} ${(o.bytes / 1024).toFixed(0)} KiB`);
  console.log(`bundled in ${(performance.now() - t0).toFixed(0)} ms: ${outputs.join(', ')}`);
}

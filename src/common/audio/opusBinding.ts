// The @discordjs/opus native module, loaded without node-pre-gyp. The package's own entry asks node-pre-gyp
// to find its compiled binary, which loads npmlog, gauge, semver and detect-libc first: ~0.1 s of the agent's
// start-up on this machine, more on a Pi, and memory for code that is never used again. The binary's place is
// fixed by the package's "binary.module_path" (prebuild/<abi>-napi-v3-<platform>-<arch>-<libc>-<version>/),
// so it is required directly; anything unexpected falls back to the package's entry.
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export type OpusModule = typeof import('@discordjs/opus');

const require = createRequire(import.meta.url);
let loaded: OpusModule | undefined;

export function loadOpus(): OpusModule {
  if (loaded) return loaded;
  try {
    const dir = path.join(path.dirname(require.resolve('@discordjs/opus/package.json')), 'prebuild');
    const candidates = existsSync(dir) ? readdirSync(dir).filter((d) => d.includes(`-${process.platform}-${process.arch}-`)) : [];
    for (const d of candidates) {
      const file = path.join(dir, d, 'opus.node');
      if (!existsSync(file)) continue;
      try {
        const m = require(file) as OpusModule;
        if (typeof m.OpusEncoder === 'function') return (loaded = m);
      } catch {
        /* built for another ABI: try the next, then the package's own loader */
      }
    }
  } catch {
    /* layout changed: the package's loader knows */
  }
  return (loaded = require('@discordjs/opus') as OpusModule);
}

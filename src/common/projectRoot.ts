// Where the project's own files are (package.json, scripts/virtual-audio.sh), wherever the code runs from:
// src/ under tsx or vitest, or the bundle in dist/ (npm run build), in a checkout or in /opt/speaker-agent.
// Found by walking up from this module to the package.json named "speaker-agent", so no path depends on how
// deep a module sits once bundled.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_NAME = 'speaker-agent';
let cached: { root: string; version: string } | undefined;

function find(): { root: string; version: string } {
  if (cached) return cached;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      try {
        const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
        if (pkg.name === PACKAGE_NAME) return (cached = { root: dir, version: pkg.version ?? '0.0.0' });
      } catch {
        /* not ours: keep looking */
      }
    }
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`cannot find the ${PACKAGE_NAME} package.json above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}

/** The project's directory (where package.json, scripts/ and node_modules/ are). */
export function projectRoot(): string {
  return find().root;
}

/** The version in the project's package.json. */
export function projectVersion(): string {
  return find().version;
}

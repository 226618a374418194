// Which espeak-ng language voices exist on this machine, read from espeak-ng-data/lang (one file per voice;
// the file name is the voice name). Cached after the first call.
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const CANDIDATE_DATA_DIRS = [
  process.env.ESPEAK_DATA_PATH ? path.join(process.env.ESPEAK_DATA_PATH, 'espeak-ng-data') : '',
  '/usr/lib/x86_64-linux-gnu/espeak-ng-data',
  '/usr/lib/aarch64-linux-gnu/espeak-ng-data',
  '/usr/lib/arm-linux-gnueabihf/espeak-ng-data',
  '/usr/share/espeak-ng-data',
  '/usr/local/share/espeak-ng-data',
].filter(Boolean);

let cache: Set<string> | null = null;

export function espeakDataDir(): string | null {
  return CANDIDATE_DATA_DIRS.find((d) => existsSync(path.join(d, 'lang'))) ?? null;
}

/** Lower-case espeak language voice names, e.g. 'en-us', 'en-gb-scotland', 'de', 'pt-br'. */
export function espeakLanguages(): Set<string> {
  if (cache) return cache;
  const found = new Set<string>();
  const dir = espeakDataDir();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = path.join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else found.add(name.toLowerCase());
    }
  };
  if (dir) walk(path.join(dir, 'lang'));
  if (found.has('en')) found.add('en-gb'); // 'en' is espeak's British English voice, also answering to en-gb
  cache = found;
  return found;
}

export function isEspeakLanguage(code: string): boolean {
  return espeakLanguages().has(code.toLowerCase());
}

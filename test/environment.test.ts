// Every SPEAKER_AGENT_* variable is declared in one of three places (the two settings schemas and
// src/common/processEnv.ts), read only there, and listed in the README; test-only ones (SPEAKER_AGENT_TEST_*)
// stay in test/.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ENV_OVERRIDES } from '../src/agent/settings.js';
import { PROCESS_VARIABLES } from '../src/common/processEnv.js';
import { COMPANION_ENV_OVERRIDES } from '../src/companion/settings.js';

const root = path.resolve(import.meta.dirname, '..');
const NAME = /^SPEAKER_AGENT_[A-Z0-9_]*[A-Z0-9]$/;
const MENTION = /\bSPEAKER_AGENT_[A-Z0-9_]*[A-Z0-9]\b/g;
const TEST_ONLY = /^SPEAKER_AGENT_TEST_/;

/** The modules that may name a variable in code: where they are declared and read. */
const ALLOWED = ['src/agent/settings.ts', 'src/companion/settings.ts', 'src/common/processEnv.ts'];

const declared = new Set([
  ...ENV_OVERRIDES.map((o) => o.env),
  ...COMPANION_ENV_OVERRIDES.map((o) => o.env),
  ...Object.values(PROCESS_VARIABLES).map((v) => v.env),
]);

function files(dir: string, exts: RegExp): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.posix.join(dir, e.name);
    if (e.isDirectory()) return files(rel, exts);
    return exts.test(e.name) ? [rel] : [];
  });
}

/** Variable names used as code in a TypeScript file: identifiers, property names and whole string literals
 *  (`process.env.X`, `env['X']`, `{ X: value }`), not names inside messages or comments. */
function namesInCode(text: string): string[] {
  const sf = ts.createSourceFile('x.ts', text, ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const visit = (n: ts.Node): void => {
    if ((ts.isIdentifier(n) || ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) && NAME.test(n.text)) out.push(n.text);
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

const mentions = (text: string) => [...new Set(text.match(MENTION) ?? [])];
const readmeTable = (file: string, columns: number) => {
  const re = new RegExp(`^\\| \`(SPEAKER_AGENT_[A-Z0-9_]+)\` \\|${columns === 3 ? ' `([^`]+)` \\|' : ' (?!`)'}`, 'gm');
  return [...readFileSync(path.join(root, file), 'utf8').matchAll(re)].map((m) => (columns === 3 ? `${m[1]}=${m[2]}` : m[1]));
};

describe('SPEAKER_AGENT_* variables', () => {
  it('finds names used as code, not names in messages', () => {
    expect(namesInCode(`const a = process.env.SPEAKER_AGENT_TEST_A; const b = env['SPEAKER_AGENT_TEST_B']; f({ SPEAKER_AGENT_TEST_C: 1 });
      // SPEAKER_AGENT_TEST_D in a comment
      throw new Error('set SPEAKER_AGENT_TEST_E');`)).toEqual(['SPEAKER_AGENT_TEST_A', 'SPEAKER_AGENT_TEST_B', 'SPEAKER_AGENT_TEST_C']);
  });

  it('are read only by the settings schemas and src/common/processEnv.ts', () => {
    const elsewhere = files('src', /\.ts$/)
      .filter((f) => !ALLOWED.includes(f))
      .flatMap((f) => namesInCode(readFileSync(path.join(root, f), 'utf8')).map((n) => `${f}: ${n}`));
    expect(elsewhere).toEqual([]);
  });

  it('named anywhere in src/, scripts/, bench/, systemd/ are declared; test/ may add SPEAKER_AGENT_TEST_* only', () => {
    const undeclared: string[] = [];
    for (const dir of ['src', 'scripts', 'bench', 'systemd', 'bin', 'test']) {
      for (const f of files(dir, /\.(ts|mjs|js|sh|service)$|^[^.]+$/)) {
        for (const n of mentions(readFileSync(path.join(root, f), 'utf8'))) {
          if (declared.has(n) || (dir === 'test' && TEST_ONLY.test(n))) continue;
          undeclared.push(`${f}: ${n}`);
        }
      }
    }
    expect(undeclared).toEqual([]);
    expect([...declared].filter((n) => TEST_ONLY.test(n))).toEqual([]);
  });

  it('are all in the README tables, each with its setting', () => {
    expect(readmeTable('README.md', 3).sort()).toEqual(ENV_OVERRIDES.map((o) => `${o.env}=${o.key}`).sort());
    expect(readmeTable('src/companion/README.md', 3).sort()).toEqual(COMPANION_ENV_OVERRIDES.map((o) => `${o.env}=${o.key}`).sort());
    expect(readmeTable('README.md', 2).sort()).toEqual(Object.values(PROCESS_VARIABLES).map((v) => v.env).sort());
  });

  it('that the README names are declared or test-only', () => {
    const text = readFileSync(path.join(root, 'README.md'), 'utf8') + readFileSync(path.join(root, 'src/companion/README.md'), 'utf8');
    expect(mentions(text).filter((n) => !declared.has(n) && !TEST_ONLY.test(n))).toEqual([]);
  });
});

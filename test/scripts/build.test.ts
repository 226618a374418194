// The bundle `npm run build` writes (scripts/build.mjs): what the daemon (`speaker-agent run`) loads is what its
// memory and start-up budgets pay for. Read from esbuild's metafile of a real build.
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain JavaScript build script, no type declarations
import { bundle } from '../../scripts/build.mjs';

interface Metafile {
  outputs: Record<string, { entryPoint?: string; inputs: Record<string, unknown>; imports: Array<{ path: string; kind: string }> }>;
}

const ROOT = path.resolve(import.meta.dirname, '../..');
const outdir = mkdtempSync(path.join(ROOT, '.test-runtime', 'build-test-'));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

/** Every input (source file or package file) in the chunks `from` loads without a dynamic import. */
function staticInputs(meta: Metafile, from: string[]): string[] {
  const seen = new Set<string>();
  const stack = [...from];
  while (stack.length) {
    const f = stack.pop()!;
    if (seen.has(f)) continue;
    seen.add(f);
    for (const i of meta.outputs[f].imports) if (i.kind === 'import-statement' && meta.outputs[i.path]) stack.push(i.path);
  }
  return [...seen].flatMap((f) => Object.keys(meta.outputs[f].inputs));
}

describe('the bundle', () => {
  it('the daemon (run) loads no companion server code, and neither conf nor its schema validator (ajv)', async () => {
    const { metafile } = (await bundle({ outdir, quiet: true })) as { metafile: Metafile };
    const chunkOf = (entry: string) => {
      const hit = Object.entries(metafile.outputs).find(([, o]) => o.entryPoint === entry);
      if (!hit) throw new Error(`no chunk for ${entry}`);
      return hit[0];
    };
    const loaded = staticInputs(metafile, [chunkOf('src/cli/main.ts'), chunkOf('src/cli/program.ts'), chunkOf('src/cli/runAgent.ts')]);
    expect(loaded).toContain('src/agent/agent.ts'); // the closure is the real one
    expect(loaded.filter((f) => f.startsWith('src/companion/'))).toEqual([]);
    expect(loaded.filter((f) => /node_modules\/(conf|ajv|ajv-formats|better-sqlite3|fastify)\//.test(f))).toEqual([]);
  });
});

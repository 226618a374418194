// The bundle `npm run build` writes (scripts/build.mjs): what the daemon (`speaker-agent run`) loads is what its
// memory and start-up budgets pay for. Read from esbuild's metafile of a real build.
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  let metafile: Metafile;
  /** What `speaker-agent run` loads before its first dynamic import: the CLI, the program, the agent. */
  let daemonLoads: string[];
  beforeAll(async () => {
    ({ metafile } = (await bundle({ outdir, quiet: true })) as { metafile: Metafile });
    const chunkOf = (entry: string) => {
      const hit = Object.entries(metafile.outputs).find(([, o]) => o.entryPoint === entry);
      if (!hit) throw new Error(`no chunk for ${entry}`);
      return hit[0];
    };
    daemonLoads = staticInputs(metafile, [chunkOf('src/cli/main.ts'), chunkOf('src/cli/program.ts'), chunkOf('src/cli/runAgent.ts')]);
  }, 60_000);

  it('the daemon (run) loads no companion server code, and neither conf nor its schema validator (ajv)', () => {
    expect(daemonLoads).toContain('src/agent/agent.ts'); // the closure is the real one
    expect(daemonLoads.filter((f) => f.startsWith('src/companion/'))).toEqual([]);
    expect(daemonLoads.filter((f) => /node_modules\/(conf|ajv|ajv-formats|better-sqlite3|fastify)\//.test(f))).toEqual([]);
  });

  it("werift's certificate stack is replaced by the stub: the daemon loads none of @peculiar/x509, asn1js, tsyringe", () => {
    expect(daemonLoads.some((f) => f.includes('node_modules/werift/'))).toBe(true); // it does load werift itself
    expect(daemonLoads).toContain('scripts/bundle-stubs/peculiar-x509.mjs');
    expect(daemonLoads.filter((f) => /node_modules\/(@peculiar|asn1js|tsyringe|reflect-metadata)\//.test(f))).toEqual([]);
  });

  it('zod is there only as zod/mini with its English messages: no classic zod, no other locale, no JSON-schema code', () => {
    const zod = daemonLoads.filter((f) => f.includes('node_modules/zod/'));
    expect(zod).toContain('node_modules/zod/v4/mini/schemas.js');
    expect(zod.filter((f) => /zod\/v4\/(classic\/|locales\/(?!en\.js)|core\/(to|json)-?[a-z-]*schema)/.test(f))).toEqual([]);
  });
});


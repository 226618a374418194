// node:http through require (src/common/nodeHttp.ts): the agent's HTTP modules load none of what Node 26's ESM
// namespace of node:http drags in (undici, http2, zlib). CI runs this on the newest LTS, where an ESM import fails it.
import { describe, expect, it } from 'vitest';
import { http } from '../../src/common/nodeHttp.js';
import { ROOT, runTs } from '../support/childProcess.js';

describe('node:http through require', () => {
  it('is node:http', async () => {
    const { createRequire } = await import('node:module');
    expect(http).toBe(createRequire(import.meta.url)('node:http'));
  });

  it("the agent's HTTP modules load neither undici nor http2 nor zlib", async () => {
    const r = await runTs(`${ROOT}/test/support/agentHttpModules.ts`, []);
    expect(r.code, r.stderr).toBe(0);
    const loaded = JSON.parse(r.stdout.trim().split('\n').pop()!) as string[];
    expect(loaded).toContain('NativeModule http');
    for (const m of ['internal/deps/undici/undici', 'http2', 'zlib']) expect(loaded).not.toContain(`NativeModule ${m}`);
  });
});

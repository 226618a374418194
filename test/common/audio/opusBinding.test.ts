// The Opus addon is loaded straight from its compiled binary: node-pre-gyp (and npmlog, gauge, semver...) stays
// out of the agent's start-up, and the codec is the same libopus the package's own entry would give.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadOpus } from '../../../src/common/audio/opusBinding.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');

describe('loadOpus', () => {
  it('encodes and decodes a 20 ms frame', () => {
    const opus = loadOpus();
    const enc = new opus.OpusEncoder(48_000, 1);
    const pcm = Buffer.alloc(1920);
    for (let i = 0; i < 960; i++) pcm.writeInt16LE(Math.round(Math.sin((2 * Math.PI * 440 * i) / 48_000) * 8000), i * 2);
    const packet = enc.encode(pcm);
    expect(packet.length).toBeGreaterThan(3);
    expect(new opus.OpusEncoder(48_000, 1).decode(packet).length).toBe(1920);
  });

  it('does not load node-pre-gyp (the package entry would)', () => {
    const script = `
      import { createRequire } from 'node:module';
      const { loadOpus } = await import(${JSON.stringify(path.join(ROOT, 'src/common/audio/opusBinding.ts'))});
      loadOpus();
      const loaded = Object.keys(createRequire(import.meta.url).cache);
      console.log(JSON.stringify({ preGyp: loaded.some((f) => f.includes('node-pre-gyp')), binary: loaded.find((f) => f.endsWith('opus.node')) ?? null }));
    `;
    const out = JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' })) as { preGyp: boolean; binary: string | null };
    expect(out.preGyp).toBe(false);
    expect(out.binary).toMatch(/@discordjs\/opus\/prebuild\/.+\/opus\.node$/);
  });
});

import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EspeakSynthesizer, espeakVoiceSettings } from '../../../src/companion/speech/espeakSynthesizer.js';
import type { SynthesisResult } from '../../../src/companion/speech/synthesizer.js';
import { SpeechError } from '../../../src/companion/speech/speechError.js';
import { rmsDbfs } from '../../../src/common/audio/signal.js';
import { concatPcm } from './speechFixtures.js';

let synth: EspeakSynthesizer;
beforeAll(async () => {
  synth = new EspeakSynthesizer({ bulkWorkers: 2, realtimeWorkers: 1 });
  await synth.ready();
});
afterAll(async () => {
  await synth.close();
});

async function speak(text: string, lane: 'realtime' | 'bulk' = 'bulk') {
  const chunks: Int16Array[] = [];
  const result = await synth.synthesize(text, { language: 'en-us' }, { lane, onAudio: (p) => chunks.push(p) });
  return { result, chunks, pcm: concatPcm(...chunks) };
}

/** Whether a process still exists (signal 0 only checks). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function expectWordContract(text: string, r: SynthesisResult) {
  const words = text.split(/\s+/).filter(Boolean);
  expect(r.words.map((w) => w.word)).toEqual(words);
  let prevEnd = 0;
  for (const w of r.words) {
    expect(text.slice(w.textOffset, w.textOffset + w.textLength)).toBe(w.word);
    expect(w.startMs).toBeGreaterThanOrEqual(prevEnd);
    expect(w.endMs).toBeGreaterThanOrEqual(w.startMs);
    prevEnd = w.endMs;
  }
  expect(prevEnd).toBeLessThanOrEqual(r.durationMs);
}

describe('EspeakSynthesizer', () => {
  it('streams audio and times every written word once, in order, through numbers, abbreviations and symbols', async () => {
    const text = 'Hello world, it is 1234 o\'clock.  Dr. Smith’s café — costs $5.50! Ünïcode 😀 works; e.g. NASA, U.S.A. & co.';
    const { result, chunks, pcm } = await speak(text);
    expectWordContract(text, result);
    expect(result.sampleRate).toBe(22050);
    expect(pcm.length).toBe(result.samples);
    expect(chunks.length).toBeGreaterThan(1);
    expect(result.durationMs).toBe(Math.round((result.samples * 1000) / 22050));
    // spoken words carry real time; audio inside a long word is not silence
    const hello = result.words[0];
    expect(hello.endMs - hello.startMs).toBeGreaterThan(150);
    const seg = pcm.subarray(Math.round((hello.startMs * 22050) / 1000), Math.round((hello.endMs * 22050) / 1000));
    expect(rmsDbfs(seg)).toBeGreaterThan(-35);
    // the number gets the time of its whole expansion (one thousand two hundred and thirty four)
    const num = result.words.find((w) => w.word === '1234')!;
    expect(num.endMs - num.startMs).toBeGreaterThan(1000);
  });

  it('keeps the word contract over long text split into chunks across both bulk workers', async () => {
    const sentence = 'The 3 little pigs built houses of straw, sticks and bricks; the wolf huffed and puffed! ';
    let text = '';
    while (text.length < 6000) text += sentence;
    const { result, chunks } = await speak(text);
    expectWordContract(text, result);
    expect(chunks.length).toBeGreaterThan(20);
    expect(result.durationMs).toBeGreaterThan(6000 * 40); // ~0.06 s per character in English speech
  });

  it('gives empty text an empty result and rejects bad voices with typed errors', async () => {
    const empty = await speak('   ');
    expect(empty.result).toMatchObject({ words: [], samples: 0, durationMs: 0 });
    await expect(synth.synthesize('hi', { language: 'en us; rm -rf' }, { onAudio: () => {} })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(synth.synthesize('hi', { language: 'xx-zz' }, { onAudio: () => {} })).rejects.toMatchObject({ code: 'TTS_FAILED' });
    // the pool still works afterwards
    expect((await speak('still fine')).result.words).toHaveLength(2);
  });

  it('applies voice parameters: a faster rate makes shorter audio; speed multiplies the rate', async () => {
    const text = 'Once upon a time there was a quiet village by the sea.';
    const slow = await synth.synthesize(text, { language: 'en-us', rate: 120 }, { onAudio: () => {} });
    const fast = await synth.synthesize(text, { language: 'en-us', rate: 120 }, { speed: 2, onAudio: () => {} });
    expect(fast.durationMs).toBeLessThan(slow.durationMs * 0.7);
    expect(espeakVoiceSettings({ language: 'en-GB', gender: 'female' }, 1.5)).toEqual({ name: 'en+f3', rate: 263, pitch: 50, range: 50 });
  });

  it('aborts through the AbortSignal: rejects with ABORTED, no audio afterwards, pool reusable', async () => {
    let text = '';
    while (text.length < 14000) text += 'This story goes on and on, and the reader keeps reading it aloud. ';
    const ac = new AbortController();
    let after = 0;
    let rejected = false;
    const p = synth.synthesize(text, { language: 'en-us' }, {
      signal: ac.signal,
      onAudio: () => {
        if (rejected) after++;
        else ac.abort();
      },
    });
    await expect(p).rejects.toMatchObject({ code: 'ABORTED' });
    rejected = true;
    await new Promise((r) => setTimeout(r, 300));
    expect(after).toBe(0);
    const again = new AbortController();
    again.abort();
    await expect(synth.synthesize('x', { language: 'en-us' }, { signal: again.signal, onAudio: () => {} })).rejects.toBeInstanceOf(SpeechError);
    expect((await speak('after the abort')).result.words).toHaveLength(3);
  });

  it('serves a realtime reply while a long bulk narration is running (separate lane)', async () => {
    let text = '';
    while (text.length < 15000) text += 'A long narration for the story endpoint, sentence after sentence. ';
    const order: string[] = [];
    const bulk = synth.synthesize(text, { language: 'en-us' }, { lane: 'bulk', onAudio: () => {} }).then(() => order.push('bulk'));
    await new Promise((r) => setTimeout(r, 50));
    const reply = await synth.synthesize('Sure, the volume is now fifty percent.', { language: 'en-us', gender: 'female' }, { lane: 'realtime', onAudio: () => {} });
    order.push('realtime');
    await bulk;
    expect(order).toEqual(['realtime', 'bulk']);
    expect(reply.words.map((w) => w.word)).toEqual(['Sure,', 'the', 'volume', 'is', 'now', 'fifty', 'percent.']);
  });

  it('fails a request with TTS_FAILED when its worker crashes, then replaces the worker', async () => {
    let text = '';
    while (text.length < 15000) text += 'The worker will be killed while it reads this. ';
    const pids = synth.workerPids('bulk');
    expect(pids.length).toBe(2);
    let killed = false;
    const p = synth.synthesize(text, { language: 'en-us' }, {
      onAudio: () => {
        if (!killed) {
          killed = true;
          for (const pid of pids) process.kill(pid, 'SIGKILL');
        }
      },
    });
    await expect(p).rejects.toMatchObject({ code: 'TTS_FAILED', message: expect.stringMatching(/worker exited/) });
    await synth.ready();
    const fresh = synth.workerPids('bulk');
    expect(fresh).toHaveLength(2);
    expect(fresh.some((pid) => pids.includes(pid))).toBe(false);
    expect((await speak('back again')).result.words).toHaveLength(2);
  });
});

describe('EspeakSynthesizer from compiled JavaScript (dist layout)', () => {
  it('starts its .js worker without tsx and synthesizes', () => {
    const root = path.resolve(import.meta.dirname, '../../..');
    const out = path.join(root, '.test-runtime', 'speech-dist');
    rmSync(out, { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    execFileSync(
      path.join(root, 'node_modules/.bin/tsc'),
      ['--outDir', out, '--rootDir', path.join(root, 'src'), '--module', 'NodeNext', '--moduleResolution', 'NodeNext', '--target', 'ES2022',
        '--strict', '--skipLibCheck', '--types', 'node', path.join(root, 'src/companion/speech/espeakSynthesizer.ts'), path.join(root, 'src/companion/speech/espeakWorker.ts')],
      { cwd: root, stdio: 'pipe' },
    );
    writeFileSync(path.join(out, 'package.json'), '{"type":"module"}');
    const script = path.join(out, 'check.mjs');
    writeFileSync(script, `
      import { EspeakSynthesizer } from './companion/speech/espeakSynthesizer.js';
      const s = new EspeakSynthesizer({ bulkWorkers: 1, realtimeWorkers: 1 });
      let n = 0;
      const r = await s.synthesize('compiled code speaks', { language: 'en-us' }, { onAudio: (p) => { n += p.length; } });
      await s.close();
      console.log(JSON.stringify({ words: r.words.map((w) => w.word), n, samples: r.samples, execArgv: process.execArgv }));
    `);
    // the output lives inside the project, so the compiled code finds koffi in its node_modules like dist/ does
    const res = JSON.parse(execFileSync(process.execPath, [script], { cwd: out, encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } }));
    expect(res.words).toEqual(['compiled', 'code', 'speaks']);
    expect(res.n).toBe(res.samples);
    expect(res.n).toBeGreaterThan(10000);
  }, 60_000);
});

describe('EspeakSynthesizer lifecycle', () => {
  it('close() settles requests that are still running', async () => {
    const s = new EspeakSynthesizer({ bulkWorkers: 1, realtimeWorkers: 0 });
    await s.ready();
    let text = '';
    while (text.length < 15000) text += 'Closing while this is being read aloud. ';
    let started = false;
    const p = s.synthesize(text, { language: 'en-us' }, { onAudio: () => { started = true; } });
    const settled = p.then(() => 'resolved', (e: SpeechError) => e.code);
    while (!started) await new Promise((r) => setTimeout(r, 5));
    await s.close();
    expect(await settled).toBe('TTS_FAILED');
    await expect(s.synthesize('after close', { language: 'en-us' }, { onAudio: () => {} })).rejects.toMatchObject({ code: 'TTS_FAILED' });
  });

  it('serves realtime requests on bulk workers when it has no realtime worker', async () => {
    const s = new EspeakSynthesizer({ bulkWorkers: 1, realtimeWorkers: 0 });
    try {
      const r = await s.synthesize('only bulk workers here', { language: 'en-us' }, { lane: 'realtime', onAudio: () => {} });
      expect(r.words).toHaveLength(4);
    } finally {
      await s.close();
    }
  });
});

describe('EspeakSynthesizer bulk workers on demand (keepBulkWorkers: 0, as the companion runs it)', () => {
  const voice = { language: 'en-us' };

  it('replies use the realtime worker alone; bulk work starts the bulk workers, which stop once idle', async () => {
    const s = new EspeakSynthesizer({ bulkWorkers: 2, realtimeWorkers: 1, keepBulkWorkers: 0, idleStopMs: 500 });
    try {
      await s.ready();
      expect(s.workerPids('realtime')).toHaveLength(1);
      expect(s.workerPids('bulk')).toEqual([]);
      for (let i = 0; i < 3; i++) {
        const r = await s.synthesize('Sure, the volume is now fifty percent.', voice, { lane: 'realtime', onAudio: () => {} });
        expect(r.words).toHaveLength(7);
      }
      expect(s.workerPids('bulk')).toEqual([]);
      let text = '';
      while (text.length < 5000) text += 'A long narration for the story endpoint, sentence after sentence. ';
      const long = await s.synthesize(text, voice, { lane: 'bulk', onAudio: () => {} });
      expectWordContract(text, long);
      const pids = s.workerPids('bulk');
      expect(pids).toHaveLength(2);
      await vi.waitFor(() => expect(pids.filter(alive)).toEqual([]), { timeout: 10_000, interval: 50 });
      expect(s.workerPids('bulk')).toEqual([]);
      // started again for the next bulk request
      expect((await s.synthesize('once more', voice, { lane: 'bulk', onAudio: () => {} })).words).toHaveLength(2);
      const again = s.workerPids('bulk');
      expect(again.some((pid) => pids.includes(pid))).toBe(false);
      // replies of many sentences, one after another, keep only the realtime worker busy: the bulk ones stop
      let reply = '';
      while (reply.length < 2000) reply += 'One more sentence of this reply. ';
      let talked = false;
      const talking = (async () => {
        for (let i = 0; i < 20; i++) await s.synthesize(reply, voice, { lane: 'realtime', onAudio: () => {} });
        talked = true;
      })();
      await vi.waitFor(() => expect(again.filter(alive)).toEqual([]), { timeout: 10_000, interval: 50 });
      expect(talked).toBe(false); // stopped while the replies went on
      await talking;
    } finally {
      await s.close();
    }
  }, 60_000);

  it('regression: a bulk worker slower to start than idleStopMs was stopped before its work, and the request hung', async () => {
    const s = new EspeakSynthesizer({ bulkWorkers: 2, realtimeWorkers: 1, keepBulkWorkers: 0, idleStopMs: 1 });
    try {
      await s.ready();
      let text = '';
      while (text.length < 2000) text += 'Each worker starts slower than a millisecond. ';
      for (let i = 0; i < 3; i++) {
        const r = await s.synthesize(text, voice, { lane: 'bulk', onAudio: () => {} });
        expectWordContract(text, r);
        await vi.waitFor(() => expect(s.workerPids('bulk')).toEqual([]), { timeout: 10_000, interval: 20 });
      }
    } finally {
      await s.close();
    }
  }, 60_000);

  it('with no realtime worker, one bulk worker is kept for replies whatever keepBulkWorkers says', async () => {
    const s = new EspeakSynthesizer({ bulkWorkers: 2, realtimeWorkers: 0, keepBulkWorkers: 0 });
    try {
      await s.ready();
      expect(s.workerPids('bulk')).toHaveLength(1);
      expect((await s.synthesize('still answering', voice, { lane: 'realtime', onAudio: () => {} })).words).toHaveLength(2);
    } finally {
      await s.close();
    }
  }, 60_000);

  it('a second reply is taken before the rest of a long one (no bulk worker started for it)', async () => {
    const s = new EspeakSynthesizer({ bulkWorkers: 2, realtimeWorkers: 1, keepBulkWorkers: 0 });
    try {
      await s.ready();
      let text = '';
      while (text.length < 10000) text += 'This reply goes on for a while, sentence after sentence. ';
      const order: string[] = [];
      const first = s.synthesize(text, voice, { lane: 'realtime', onAudio: () => {} }).then(() => order.push('long'));
      await new Promise((r) => setTimeout(r, 20));
      const second = await s.synthesize('The time is ten past nine.', voice, { lane: 'realtime', onAudio: () => {} });
      order.push('short');
      await first;
      expect(order).toEqual(['short', 'long']);
      expect(second.words.map((w) => w.word)).toEqual(['The', 'time', 'is', 'ten', 'past', 'nine.']);
      expect(s.workerPids('bulk')).toEqual([]);
    } finally {
      await s.close();
    }
  }, 60_000);
});

describe('EspeakSynthesizer kept workers page out their start-up code', () => {
  const rssKb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);

  it('the reply worker hands its start-up code back once idle and still speaks; a started bulk worker keeps it', async () => {
    const s = new EspeakSynthesizer({ bulkWorkers: 1, realtimeWorkers: 1, keepBulkWorkers: 0, pageOutAfterMs: 500 });
    try {
      await s.ready();
      const [reply] = s.workerPids('realtime');
      const before = rssKb(reply);
      await vi.waitFor(() => expect(rssKb(reply)).toBeLessThan(before * 0.6), { timeout: 10_000, interval: 100 });
      const r = await s.synthesize('Sure, the volume is now fifty percent.', { language: 'en-us' }, { lane: 'realtime', onAudio: () => {} });
      expect(r.words).toHaveLength(7);
      expect(rssKb(reply)).toBeLessThan(before * 0.6); // what the reply ran came back, page by page
      await s.synthesize('a story for the bulk worker', { language: 'en-us' }, { lane: 'bulk', onAudio: () => {} });
      const [bulk] = s.workerPids('bulk');
      const started = rssKb(bulk);
      await new Promise((r) => setTimeout(r, 2000));
      expect(rssKb(bulk)).toBeGreaterThan(started * 0.8);
    } finally {
      await s.close();
    }
  }, 30_000);
});

// Real failures of real worker processes, made on purpose: an environment too large for execve (E2BIG, which node
// throws from fork, as it does ENOMEM on a board out of memory); a node binary that is not there (ENOENT, which
// node reports as an 'error' event and never an 'exit', as it does EAGAIN when the unit's TasksMax is reached); a
// process that exits before its ready (NODE_OPTIONS naming a missing module: as the OOM killer or a crash in
// espeak's init would end it); one that never gets ready (a preloaded module that blocks: a stalled disk).
describe('EspeakSynthesizer when its worker processes cannot start', () => {
  const voice = { language: 'en-us' };
  const env = (name: string, value: string) => {
    const saved = process.env[name];
    process.env[name] = value;
    return () => {
      if (saved === undefined) delete process.env[name];
      else process.env[name] = saved;
    };
  };
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'espeak-start-'));
    writeFileSync(path.join(dir, 'hang.cjs'), 'Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);\n');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const faults = {
    'fork throws (E2BIG)': {
      inject: () => env('SPEAKER_AGENT_TEST_E2BIG', 'x'.repeat(200_000)), // above execve's 128 KiB a string
      error: /E2BIG/,
      startTimeoutMs: undefined,
      withinMs: 15_000,
    },
    'regression: the process never starts (ENOENT), so no exit came and the requests hung': {
      inject: () => {
        const saved = process.execPath;
        process.execPath = '/nonexistent/node-for-this-test';
        return () => {
          process.execPath = saved;
        };
      },
      error: /ENOENT/,
      startTimeoutMs: undefined,
      withinMs: 15_000,
    },
    'regression: the process exits before its ready, so it was started again and again and the requests hung': {
      inject: () => env('NODE_OPTIONS', '--require=/nonexistent/preload-for-this-test.cjs'),
      error: /exited \(\d+\) before it was ready: Error: Cannot find module/,
      startTimeoutMs: undefined,
      withinMs: 15_000,
    },
    'regression: the process never gets ready, and the requests hung': {
      inject: () => env('NODE_OPTIONS', `--require=${path.join(dir, 'hang.cjs')}`),
      error: /not ready within 4000 ms/,
      startTimeoutMs: 4000, // the starts after it too: slow ones are killed, and waitFor below tries again
      withinMs: 3 * 4000 + 5000, // each of the three requests waits for one start
    },
  };

  it.each(Object.keys(faults) as (keyof typeof faults)[])('%s: requests fail with TTS_FAILED, and synthesis works again once processes start', async (name) => {
    const fault = faults[name];
    const restore = fault.inject();
    let s: EspeakSynthesizer | undefined;
    try {
      s = new EspeakSynthesizer({ bulkWorkers: 1, realtimeWorkers: 1, keepBulkWorkers: 0, startTimeoutMs: fault.startTimeoutMs });
      const t0 = Date.now();
      const failed = expect.objectContaining({ code: 'TTS_FAILED', message: expect.stringMatching(fault.error) });
      // a request waiting for the start, one made after it failed (its start tried again for it), and bulk work
      const waiting = s.synthesize('is anyone there', voice, { lane: 'realtime', onAudio: () => {} });
      await expect(waiting).rejects.toEqual(failed);
      await expect(s.synthesize('anyone at all', voice, { lane: 'realtime', onAudio: () => {} })).rejects.toEqual(failed);
      await expect(s.synthesize('a story', voice, { lane: 'bulk', onAudio: () => {} })).rejects.toEqual(failed);
      expect(Date.now() - t0).toBeLessThan(fault.withinMs); // the starts' failures or timeouts, not a hang
    } finally {
      restore();
    }
    try {
      // the kept worker starts at its next try, or for a request (one made while a doomed start still runs fails
      // with it); the bulk one when bulk work comes
      await vi.waitFor(async () => expect((await s!.synthesize('here again', voice, { lane: 'realtime', onAudio: () => {} })).words).toHaveLength(2), { timeout: 20_000, interval: 100 });
      await vi.waitFor(async () => expect((await s!.synthesize('and the story', voice, { lane: 'bulk', onAudio: () => {} })).words).toHaveLength(3), { timeout: 20_000, interval: 100 });
      expect(s.workerPids('realtime')).toHaveLength(1);
      expect(s.workerPids('bulk')).toHaveLength(1);
    } finally {
      await s.close();
    }
  }, 60_000);
});

describe('EspeakSynthesizer when the companion is killed', () => {
  it('its worker processes end with it when it is killed (SIGKILL, a crash: no close()): nothing of theirs keeps them alive without their channel', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'espeak-orphans-'));
    const script = path.join(dir, 'owner.mts');
    const module = path.resolve(import.meta.dirname, '../../../src/companion/speech/espeakSynthesizer.ts');
    writeFileSync(script, `import { EspeakSynthesizer } from ${JSON.stringify(module)};\nconst s = new EspeakSynthesizer({ bulkWorkers: 1, realtimeWorkers: 1 });\nawait s.ready();\nconsole.log(JSON.stringify(s.workerPids()));\nsetInterval(() => {}, 1000);\n`);
    const owner = spawn(process.execPath, ['--import', 'tsx', script], { cwd: path.resolve(import.meta.dirname, '../../..'), stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let out = '';
        owner.stdout!.on('data', (b: Buffer) => {
          out += b.toString();
          if (out.includes('\n')) resolve(out.trim());
        });
        owner.once('exit', (code) => reject(new Error(`owner exited ${code}`)));
      });
      const pids = JSON.parse(line) as number[];
      expect(pids).toHaveLength(2);
      expect(pids.every(alive)).toBe(true);
      owner.kill('SIGKILL');
      await vi.waitFor(() => expect(pids.filter(alive)).toEqual([]), { timeout: 10_000, interval: 100 });
    } finally {
      owner.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('EspeakSynthesizer without a usable libespeak-ng', () => {
  // the second: one lane's work on the other lane's worker (regression: only the failed worker's own lane failed)
  it.each([
    { bulkWorkers: 1, realtimeWorkers: 0 },
    { bulkWorkers: 0, realtimeWorkers: 1 },
  ])('rejects with TTS_FAILED instead of hanging, on both lanes (%o)', async (workers) => {
    const saved = process.env.SPEAKER_AGENT_ESPEAK_LIB;
    process.env.SPEAKER_AGENT_ESPEAK_LIB = 'libespeak-ng-does-not-exist.so.9';
    const s = new EspeakSynthesizer(workers);
    try {
      await expect(s.ready()).rejects.toMatchObject({ code: 'TTS_FAILED', message: expect.stringMatching(/failed to start: .*shared library/) });
      for (const lane of ['bulk', 'realtime'] as const) {
        await expect(s.synthesize('hello', { language: 'en-us' }, { lane, onAudio: () => {} })).rejects.toMatchObject({
          code: 'TTS_FAILED',
          message: expect.stringMatching(/could not start: .*shared library/),
        });
      }
    } finally {
      if (saved === undefined) delete process.env.SPEAKER_AGENT_ESPEAK_LIB;
      else process.env.SPEAKER_AGENT_ESPEAK_LIB = saved;
      await s.close();
    }
  });
});

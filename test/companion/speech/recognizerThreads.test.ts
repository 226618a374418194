// The companion's recogniser: pocketsphinx in worker threads. Real speech (flite) decoded through the threads,
// story names reaching them, a thread crash in the middle of an utterance, malformed input, and the second thread
// that starts only while utterances overlap.
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ThreadedRecognizer } from '../../../src/companion/speech/recognizerThreads.js';
import { concatPcm, fliteSpeech, frames } from './speechFixtures.js';
import { threadScheduling } from '../../support/threadPriority.js';

let rec: ThreadedRecognizer;
beforeAll(async () => {
  rec = new ThreadedRecognizer({ threads: 2, keepThreads: 2, storyNames: ['The Little Red Hen'] });
  await rec.warmUp();
}, 60_000);
afterAll(async () => {
  await rec.close();
});

const speech = (text: string) => concatPcm(new Int16Array(4000), fliteSpeech(text, 16000, 'slt'), new Int16Array(4000));
/** OS threads of this process at nice 19 with SCHED_IDLE: the decoding threads of every recogniser here */
const decodingThreads = () => threadScheduling().filter((t) => t.nice === 19 && t.policy === 5).length;

describe('ThreadedRecognizer', () => {
  it('decodes in threads at nice 19 with SCHED_IDLE, while the event loop keeps normal priority', () => {
    expect(decodingThreads()).toBe(2);
    expect(threadScheduling().find((t) => t.tid === process.pid)).toMatchObject({ nice: 0, policy: 0 });
  });

  it('recognises speech streamed in 20 ms frames through a decoding thread', async () => {
    expect(rec.threadIds()).toHaveLength(2);
    const s = rec.createStream({ mode: 'command' });
    for (const f of frames(speech('set the volume to forty percent'), 320)) s.write(f);
    const r = await s.end();
    expect(r.grammarMatch).toBe(true);
    expect(r.text).toContain('forty percent');
  });

  it('decodes on both threads at once, and story names given later reach every thread', async () => {
    rec.setStoryNames(['Goldilocks']);
    const [a, b] = await Promise.all([rec.recognize(speech('read the story goldilocks')), rec.recognize(speech('what time is it'))]);
    expect(a.grammarMatch).toBe(true);
    expect(a.text).toContain('goldilocks');
    expect(b).toMatchObject({ text: 'what time is it', grammarMatch: true });
    const c = await rec.recognize(speech('read the story goldilocks'));
    expect(c.text).toContain('goldilocks');
  });

  it('a thread crashing mid-utterance fails that utterance; the next one is decoded by a restarted thread', async () => {
    const before = rec.threadStarts;
    const s = rec.createStream();
    s.write(speech('turn it up'));
    // the stream went to the first idle slot; crash every thread so it is certainly hit
    await Promise.all([rec.crashThreadForTest(0), rec.crashThreadForTest(1)]);
    await expect(s.end()).rejects.toMatchObject({ name: 'SpeechError', code: 'RECOGNIZER_FAILED' });
    const r = await rec.recognize(speech('turn it up'));
    expect(r).toMatchObject({ text: 'turn it up', grammarMatch: true });
    expect(rec.threadStarts).toBeGreaterThan(before);
    // the restarted thread has the story names set before the crash
    expect((await rec.recognize(speech('read the story goldilocks'))).text).toContain('goldilocks');
  });

  it('regression: a decode that hung left its utterance waiting for ever (the call heard nothing more) and the thread taken; past the deadline it fails, the thread is replaced and the next utterance is decoded', async () => {
    const hung = new ThreadedRecognizer({ threads: 1, decodeDeadlineMs: 1500, hungStopGraceMs: 500 });
    try {
      await hung.warmUp();
      const [before] = hung.threadIds();
      const osThreads = decodingThreads(); // this recogniser's thread, and whatever `rec` has running now
      const starts = hung.threadStarts;
      const s = hung.createStream();
      s.write(speech('turn it up'));
      hung.hangThreadForTest(0, 120_000); // the thread stops answering before the utterance's end reaches it
      const t0 = performance.now();
      await expect(s.end()).rejects.toMatchObject({ name: 'SpeechError', code: 'RECOGNIZER_FAILED', message: expect.stringMatching(/no result 1\.5 s after the utterance ended: its thread was replaced/) });
      const waited = performance.now() - t0;
      expect(waited).toBeGreaterThanOrEqual(1450);
      expect(waited).toBeLessThan(5000);
      expect(hung.threadIds()).not.toContain(before);
      // the next utterance gets a new thread and its transcript (the busy one, asked to stop, is terminated once its
      // grace is over: a JavaScript loop, not native code, so terminate() is safe here); loaded first, as
      // the kept thread is at start (its first utterance would wait for the load: more than this test's deadline)
      await hung.warmUp();
      expect(await hung.recognize(speech('turn it up'))).toMatchObject({ text: 'turn it up', grammarMatch: true });
      expect(hung.threadStarts).toBe(starts + 1);
      // the new thread in, the hung one gone (a busy thread left running would make one more)
      await vi.waitFor(() => expect(decodingThreads()).toBe(osThreads), { timeout: 10_000, interval: 100 });
    } finally {
      await hung.close();
    }
  }, 60_000);

  it("keeps the language model's dictionary in its cache directory: made at the first start, used by the next", async () => {
    const cacheDir = mkdtempSync(path.join(os.tmpdir(), 'recognizer-cache-'));
    try {
      const first = new ThreadedRecognizer({ threads: 2, cacheDir });
      await first.warmUp();
      await first.close();
      const names = readdirSync(cacheDir);
      expect(names).toEqual([expect.stringMatching(/^lm-words-[0-9a-f]{16}\.dict$/)]);
      const made = statSync(path.join(cacheDir, names[0]));
      const next = new ThreadedRecognizer({ threads: 2, cacheDir });
      try {
        await next.warmUp();
        expect(await next.recognize(speech('turn it down'))).toMatchObject({ text: 'turn it down', grammarMatch: true });
        expect(await next.recognize(speech('the weather is lovely today'), { mode: 'dictation' })).toMatchObject({ text: expect.stringMatching(/weather/) });
      } finally {
        await next.close();
      }
      expect(readdirSync(cacheDir)).toEqual(names);
      expect(statSync(path.join(cacheDir, names[0])).ino).toBe(made.ino); // not made again
    } finally {
      rmSync(cacheDir, { recursive: true, force: true });
    }
  }, 120_000);

  it('malformed input gives an error, not a crash, and the recogniser keeps working', async () => {
    const s = rec.createStream();
    s.write(new Float32Array(320) as unknown as Int16Array);
    await expect(s.end()).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(() => rec.createStream({ mode: 'shouting' as never })).toThrow(/unknown recognition mode/);
    const aborted = rec.createStream();
    aborted.write(speech('stop'));
    aborted.abort();
    await expect(aborted.end()).rejects.toMatchObject({ code: 'ABORTED' });
    expect(await rec.recognize(new Int16Array(16000))).toMatchObject({ text: '', grammarMatch: false });
    expect(await rec.recognize(speech('volume down'))).toMatchObject({ text: 'volume down', grammarMatch: true });
  });

  it('by default keeps one thread loaded; a second starts while two utterances overlap and stops once idle', async () => {
    const base = decodingThreads(); // the shared recogniser's
    const elastic = new ThreadedRecognizer({ idleStopMs: 2000 });
    try {
      await elastic.warmUp();
      expect(elastic.threadIds()).toHaveLength(1);
      expect(decodingThreads()).toBe(base + 1);
      const [a, b] = await Promise.all([elastic.recognize(speech('turn it up')), elastic.recognize(speech('what time is it'))]);
      expect(a).toMatchObject({ text: 'turn it up', grammarMatch: true });
      expect(b).toMatchObject({ text: 'what time is it', grammarMatch: true });
      expect(elastic.threadStarts).toBe(2);
      expect(elastic.threadIds()).toHaveLength(2); // idle for less than 2 s yet
      await vi.waitFor(() => expect(elastic.threadIds()).toHaveLength(1), { timeout: 10_000, interval: 50 });
      await vi.waitFor(() => expect(decodingThreads()).toBe(base + 1), { timeout: 10_000, interval: 50 }); // the OS thread is gone
      // one utterance at a time: the kept thread decodes them, nothing starts
      expect(await elastic.recognize(speech('volume down'))).toMatchObject({ text: 'volume down', grammarMatch: true });
      expect(await elastic.recognize(speech('set the volume to forty percent'))).toMatchObject({ grammarMatch: true });
      expect(elastic.threadStarts).toBe(2);
    } finally {
      await elastic.close();
    }
    expect(decodingThreads()).toBe(base);
  }, 120_000);

  it('an utterance arriving while an idle thread is being stopped gets a new thread and its transcript', async () => {
    const base = decodingThreads();
    const elastic = new ThreadedRecognizer({ idleStopMs: 1 }); // stopped as soon as it is idle
    let raced = 0;
    try {
      await elastic.warmUp();
      const overlap = async (a: string, b: string) => {
        const [x, y] = await Promise.all([elastic.recognize(speech(a)), elastic.recognize(speech(b))]);
        expect(x).toMatchObject({ text: a, grammarMatch: true });
        expect(y).toMatchObject({ text: b, grammarMatch: true });
        // the second thread's stop has begun (it is no longer the slot's) ...
        await vi.waitFor(() => expect(elastic.threadIds()).toHaveLength(1), { timeout: 10_000, interval: 1 });
        if (decodingThreads() === base + 2) raced++; // ... and its OS thread is still there
      };
      for (let round = 0; round < 3; round++) {
        await overlap('turn it up', 'stop');
        await overlap('turn it down', 'volume up'); // at once: a new thread beside the one stopping
      }
      expect(elastic.threadStarts).toBe(7); // the kept one, and a new one for each overlap
    } finally {
      await elastic.close(); // waits for the threads being stopped too
    }
    expect(elastic.threadIds()).toEqual([]);
    expect(decodingThreads()).toBe(base);
    expect(raced).toBeGreaterThan(0); // the race this test is about happened
  }, 120_000);

  it('a thread needed again soon after its idle stop waits twice as long the next time; after a quiet spell, as set', async () => {
    const elastic = new ThreadedRecognizer({ idleStopMs: 50 });
    const overlapAndStop = async () => {
      await Promise.all([elastic.recognize(speech('turn it up')), elastic.recognize(speech('stop'))]);
      await vi.waitFor(() => expect(elastic.threadIds()).toHaveLength(1), { timeout: 10_000, interval: 10 });
    };
    try {
      await elastic.warmUp();
      expect(elastic.idleStopDelaysMs()).toEqual([50]);
      await overlapAndStop(); // the first start: as set
      expect(elastic.idleStopDelaysMs()).toEqual([50]);
      await overlapAndStop(); // within 10 x 50 ms of the stop
      expect(elastic.idleStopDelaysMs()).toEqual([100]);
      await overlapAndStop();
      expect(elastic.idleStopDelaysMs()).toEqual([200]);
      await new Promise((r) => setTimeout(r, 2100)); // more than 10 x 200 ms
      await overlapAndStop();
      expect(elastic.idleStopDelaysMs()).toEqual([50]);
      expect(elastic.threadStarts).toBe(5);
    } finally {
      await elastic.close();
    }
  }, 120_000);

  it('a crashed kept thread is started again for the next utterance; the extra one goes idle and stops', async () => {
    const elastic = new ThreadedRecognizer({ idleStopMs: 3000 });
    try {
      await elastic.warmUp();
      await Promise.all([elastic.recognize(speech('turn it up')), elastic.recognize(speech('stop'))]); // both threads up
      await elastic.crashThreadForTest(0);
      expect(elastic.threadIds()).toHaveLength(1);
      expect(await elastic.recognize(speech('volume down'))).toMatchObject({ text: 'volume down', grammarMatch: true });
      expect(elastic.threadStarts).toBe(3); // the kept slot restarted, not the running extra one reused
      await vi.waitFor(() => expect(elastic.threadIds()).toHaveLength(1), { timeout: 10_000, interval: 50 });
      expect(await elastic.recognize(speech('what time is it'))).toMatchObject({ text: 'what time is it', grammarMatch: true });
      expect(elastic.threadStarts).toBe(3);
    } finally {
      await elastic.close();
    }
  }, 120_000);
});

// A stock client nobody here wrote against the companion's GA routes: the official realtime SDK for JavaScript
// (@openai/agents-realtime from the npm registry, its own browser bundle, unmodified) in headless Chromium, using
// its WebRTC transport. The page only declares an agent with one tool and connects with a client key minted by
// POST /v1/realtime/client_secrets; the fake microphone asks "what is the weather like". The SDK must connect
// (session.updated acknowledged), receive the function call, run its tool, send the output, and play the reply.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, type ChromiumSession } from '../../support/chromiumDriver.js';
import { startRealtimeTestServer, type RealtimeTestServer } from '../../support/realtimeServer.js';
import { speechClip } from '../../support/speechWav.js';
import { startSdkPage } from '../../support/stockRealtimeSdk.js';

describe('the stock realtime SDK (@openai/agents-realtime) in headless Chromium against the companion', () => {
  let srv: RealtimeTestServer;
  let page: { url: string; close: () => Promise<void> };
  let browser: ChromiumSession;

  beforeAll(async () => {
    srv = await startRealtimeTestServer();
    page = await startSdkPage();
    // lead-in silence so the words arrive on a connected call, then silence for the whole exchange
    browser = await launchChromium({ fakeMicrophoneWav: speechClip('what is the weather like', { padBeforeMs: 4000, padAfterMs: 12000 }).file });
  });
  afterAll(async () => {
    await browser?.close();
    await page?.close();
    await srv?.close();
  });

  it('connects with a client key, calls the client tool, speaks its output', async () => {
    const minted = await fetch(`${srv.url}/v1/realtime/client_secrets`, { method: 'POST', headers: srv.newDevice() });
    expect(minted.status).toBe(200);
    const key = ((await minted.json()) as { value: string }).value;
    await browser.page.goto(page.url);
    const callId = await browser.page.evaluate(([base, k]) => (globalThis as any).startSdk(base, k), [srv.url, key] as const);
    expect(callId).toMatch(/^call_/);
    const connectMs = (await browser.page.evaluate(() => (globalThis as any).connectMs)) as number;
    // session.updated acknowledged the SDK's session.update (the SDK waits up to 5 s for it, then connects anyway)
    expect(connectMs).toBeLessThan(4000);
    console.log(`stock SDK: offer -> connected ${Math.round(connectMs)} ms`);

    await browser.page.waitForFunction(
      () => (globalThis as any).events.some((e: any) => e.type === 'response.output_audio_transcript.done'),
      undefined,
      { timeout: 30_000, polling: 100 },
    );
    const events = (await browser.page.evaluate(() => (globalThis as any).events)) as any[];
    const types = events.map((e) => e.type);
    expect(types).toContain('session.created');
    expect(types).toContain('session.updated');
    expect(events.find((e) => e.type === 'session.updated').session.tools.map((t: any) => t.name)).toEqual(['get_weather']);
    expect(types).toContain('input_audio_buffer.speech_started');
    const fc = events.find((e) => e.type === 'response.output_item.done' && e.item?.type === 'function_call');
    expect(fc.item.name).toBe('get_weather');
    expect(await browser.page.evaluate(() => (globalThis as any).toolRuns)).toBe(1);
    expect(events.find((e) => e.type === 'response.output_audio_transcript.done').transcript).toBe('It is sunny and twenty degrees.');
    expect(types).toContain('output_audio_buffer.started');
    expect(events.filter((e) => e.type === 'error')).toEqual([]);
    await browser.page.waitForFunction(() => (globalThis as any).audio.maxRms > 0.01, undefined, { timeout: 10_000, polling: 100 });
  }, 90_000);
});

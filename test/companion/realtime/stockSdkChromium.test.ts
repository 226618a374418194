// A stock client nobody here wrote against the companion's GA routes: the official realtime SDK for JavaScript
// (@openai/agents-realtime from the npm registry, its own browser bundle, unmodified) in headless Chromium, using
// its WebRTC transport. The page only declares an agent with one tool and connects with a client key minted by
// POST /v1/realtime/client_secrets; the fake microphone asks "what is the weather like". The SDK must connect
// (session.updated acknowledged), receive the function call, run its tool, send the output, and play the reply.
import { createReadStream, existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, type ChromiumSession } from '../../support/chromiumDriver.js';
import { startRealtimeTestServer, type RealtimeTestServer } from '../../support/realtimeServer.js';
import { speechClip } from '../../support/speechWav.js';

const SDK_BUNDLE_DIR = path.resolve('node_modules/@openai/agents-realtime/dist/bundle');

const PAGE = `<!doctype html><html><body><script type="module">
import { RealtimeAgent, RealtimeSession, OpenAIRealtimeWebRTC, tool } from '/sdk/openai-realtime-agents.mjs';
window.events = [];
window.toolRuns = 0;
window.audio = { maxRms: 0, samples: 0 };
window.startSdk = async (base, key) => {
  const getWeather = tool({
    name: 'get_weather',
    description: 'The weather where the speaker is.',
    parameters: { type: 'object', properties: {}, required: [], additionalProperties: false },
    strict: true,
    execute: async () => { window.toolRuns++; return 'It is sunny and twenty degrees.'; },
  });
  const agent = new RealtimeAgent({ name: 'Kitchen', instructions: 'Answer briefly.', tools: [getWeather] });
  const transport = new OpenAIRealtimeWebRTC({ baseUrl: base + '/v1/realtime/calls', audioElement: new Audio() });
  const session = new RealtimeSession(agent, { transport, model: 'gpt-realtime' });
  session.on('transport_event', (e) => window.events.push(e));
  const t0 = performance.now();
  await session.connect({ apiKey: key });
  window.connectMs = performance.now() - t0;
  // decoded samples of the reply, straight from the received track (headless Chromium reports audioLevel 0)
  const track = transport.connectionState.peerConnection.getReceivers().find((r) => r.track?.kind === 'audio').track;
  (async () => {
    const reader = new MediaStreamTrackProcessor({ track }).readable.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const buf = new Float32Array(value.numberOfFrames);
      value.copyTo(buf, { planeIndex: 0, format: 'f32-planar' });
      value.close();
      let s = 0; for (const x of buf) s += x * x;
      window.audio.samples += buf.length;
      window.audio.maxRms = Math.max(window.audio.maxRms, Math.sqrt(s / buf.length));
    }
  })();
  return transport.callId;
};
</script></body></html>`;

describe('the stock realtime SDK (@openai/agents-realtime) in headless Chromium against the companion', () => {
  let srv: RealtimeTestServer;
  let page: Server;
  let pageUrl: string;
  let browser: ChromiumSession;

  beforeAll(async () => {
    expect(existsSync(path.join(SDK_BUNDLE_DIR, 'openai-realtime-agents.mjs'))).toBe(true);
    srv = await startRealtimeTestServer();
    page = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.startsWith('/sdk/')) {
        const file = path.join(SDK_BUNDLE_DIR, path.basename(url.pathname));
        if (!existsSync(file)) return void res.writeHead(404).end();
        res.writeHead(200, { 'content-type': 'text/javascript' });
        return void createReadStream(file).pipe(res);
      }
      res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
    });
    await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
    const addr = page.address();
    pageUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/`;
    // lead-in silence so the words arrive on a connected call, then silence for the whole exchange
    browser = await launchChromium({ fakeMicrophoneWav: speechClip('what is the weather like', { padBeforeMs: 4000, padAfterMs: 12000 }).file });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => page?.close(r));
    await srv?.close();
  });

  it('connects with a client key, calls the client tool, speaks its output', async () => {
    const minted = await fetch(`${srv.url}/v1/realtime/client_secrets`, { method: 'POST', headers: srv.newDevice() });
    expect(minted.status).toBe(200);
    const key = ((await minted.json()) as { value: string }).value;
    await browser.page.goto(pageUrl);
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

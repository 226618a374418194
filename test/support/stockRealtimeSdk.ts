// The page of a stock realtime client: the official SDK for JavaScript (@openai/agents-realtime from the npm
// registry, its own browser bundle, unmodified) with one agent and one tool, served with the bundle from a local
// HTTP server for headless Chromium. Used by test/companion/realtime/stockSdkChromium.test.ts and the
// companion-ga bench.
import { createReadStream, existsSync } from 'node:fs';
import { createServer } from 'node:http';
import path from 'node:path';

export const SDK_BUNDLE_DIR = path.resolve(import.meta.dirname, '../../node_modules/@openai/agents-realtime/dist/bundle');

export const PAGE = `<!doctype html><html><body><script type="module">
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

/** Serves PAGE at / and the SDK bundle under /sdk/. */
export async function startSdkPage(): Promise<{ url: string; close: () => Promise<void> }> {
  if (!existsSync(path.join(SDK_BUNDLE_DIR, 'openai-realtime-agents.mjs'))) throw new Error(`the SDK bundle is missing in ${SDK_BUNDLE_DIR} (npm ci installs it)`);
  const page = createServer((req, res) => {
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
  return {
    url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/`,
    close: () => new Promise<void>((r) => page.close(() => r())),
  };
}

// A standard browser WebRTC client against the companion: headless Chromium creates a session, posts its SDP,
// opens `oai-events`, speaks through its fake microphone (a flite WAV) and answers the device function the way a
// device would; the test reads the events it received and how much reply audio it played.
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, type ChromiumSession } from '../../support/chromiumDriver.js';
import { startRealtimeTestServer, type RealtimeTestServer } from '../../support/realtimeServer.js';
import { speechClip } from '../../support/speechWav.js';

// The page a browser client would be: plain WebRTC + fetch, no test hooks inside the call logic.
const PAGE = `<!doctype html><html><body><script>
window.events = [];
window.audio = { maxRms: 0, samples: 0 };
window.startCall = async (base, headers) => {
  const session = await (await fetch(base + '/v1/realtime/sessions', {
    method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ modalities: ['audio', 'text'] }),
  })).json();
  const pc = new RTCPeerConnection({ iceServers: session.iceServers });
  window.pc = pc;
  const mic = await navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: false, noiseSuppression: false, autoGainControl: false } });
  for (const t of mic.getTracks()) pc.addTrack(t, mic);
  const dc = pc.createDataChannel('oai-events');
  dc.onmessage = (m) => {
    const ev = JSON.parse(m.data);
    window.events.push(ev);
    if (ev.type === 'response.output_item.done' && ev.item.type === 'function_call' && ev.item.name === 'set_device_volume') {
      const level = JSON.parse(ev.item.arguments).volume_level;
      dc.send(JSON.stringify({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: ev.item.call_id,
        output: JSON.stringify({ success: true, result: { volume_level: level, muted: false, message: 'volume set' } }) } }));
      dc.send(JSON.stringify({ type: 'response.create' }));
    }
  };
  pc.ontrack = async (e) => {
    // Chromium decodes remote audio only while a sink pulls it: play it (PulseAudio's virtual speaker in tests).
    const el = new Audio(); el.srcObject = new MediaStream([e.track]); el.play().catch(() => {});
    // Decoded samples straight from the received track (headless Chromium reports audioLevel 0 in getStats).
    const reader = new MediaStreamTrackProcessor({ track: e.track }).readable.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const n = value.numberOfFrames;
      const buf = new Float32Array(n);
      value.copyTo(buf, { planeIndex: 0, format: 'f32-planar' });
      value.close();
      let s = 0; for (const x of buf) s += x * x;
      window.audio.samples += n;
      window.audio.maxRms = Math.max(window.audio.maxRms, Math.sqrt(s / n));
    }
  };
  await pc.setLocalDescription(await pc.createOffer());
  if (pc.iceGatheringState !== 'complete') {
    await new Promise((r) => pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && r()));
  }
  const res = await fetch(base + '/v1/realtime', { method: 'POST', headers: { ...headers, 'content-type': 'application/sdp' }, body: pc.localDescription.sdp });
  if (!res.ok) throw new Error('SDP exchange failed: ' + res.status + ' ' + await res.text());
  await pc.setRemoteDescription({ type: 'answer', sdp: await res.text() });
  await new Promise((r) => { if (dc.readyState === 'open') r(); else dc.onopen = r; });
  return session.id;
};
window.samplesReceived = async () => {
  let n = 0;
  (await window.pc.getStats()).forEach((s) => { if (s.type === 'inbound-rtp' && s.kind === 'audio') n = s.totalSamplesReceived; });
  return n;
};
</script></body></html>`;

describe('realtime call from headless Chromium', () => {
  let srv: RealtimeTestServer;
  let page: Server;
  let pageUrl: string;
  let browser: ChromiumSession;

  beforeAll(async () => {
    srv = await startRealtimeTestServer();
    page = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE));
    await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
    const addr = page.address();
    pageUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/`;
    // Chromium starts the file when the microphone opens, before the call is up: lead-in silence so the words
    // arrive on a connected call, then enough silence for the whole exchange before Chromium loops the file
    browser = await launchChromium({ fakeMicrophoneWav: speechClip('set the volume to forty percent', { padBeforeMs: 3000, padAfterMs: 9000 }).file });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => page?.close(r));
    await srv?.close();
  });

  it('session, SDP, oai-events, fake-microphone speech -> transcription, function call, spoken reply', async () => {
    await browser.page.goto(pageUrl);
    const sessionId = await browser.page.evaluate(([base, headers]) => (globalThis as any).startCall(base, headers), [srv.url, srv.newDevice()] as const);
    expect(sessionId).toMatch(/^sess_/);
    await browser.page.waitForFunction(
      () => (globalThis as any).events.some((e: any) => e.type === 'response.output_audio_transcript.done'),
      undefined,
      { timeout: 25_000, polling: 100 },
    );
    const events = (await browser.page.evaluate(() => (globalThis as any).events)) as any[];
    const types = events.map((e) => e.type);
        expect(types[0]).toBe('session.created');
    expect(types).toContain('input_audio_buffer.speech_started');
    const transcript = events.find((e) => e.type === 'conversation.item.input_audio_transcription.completed');
    expect(transcript.transcript).toBe('set the volume to forty percent');
    const call = events.find((e) => e.type === 'response.output_item.done' && e.item.type === 'function_call');
    expect(call.item.name).toBe('set_device_volume');
    expect(JSON.parse(call.item.arguments)).toEqual({ volume_level: 40 });
    const done = events.find((e) => e.type === 'response.output_audio_transcript.done');
    expect(done.transcript).toBe('The volume is now 40 percent.');
    expect(events.filter((e) => e.type === 'response.output_audio_transcript.delta').map((e) => e.delta).join('')).toBe(done.transcript);

    // Let the reply play out, then check the browser really received and rendered audible audio.
    await browser.page.waitForFunction(() => (globalThis as any).audio.maxRms > 0.01, undefined, { timeout: 10_000, polling: 100 });
    expect(await browser.page.evaluate(() => (globalThis as any).samplesReceived())).toBeGreaterThan(48_000);
  }, 60_000);
});

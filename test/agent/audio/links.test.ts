// Uplink and Downlink on the real virtual sound card: microphone -> Opus -> (shuffled, lossy "network") ->
// jitter buffer -> speaker; and the half-duplex echo gate with the speaker looped back into the microphone.
import { afterEach, describe, expect, it } from 'vitest';
import type { PlaybackDevice, CaptureDevice } from '../../../src/agent/audio/audioDevice.js';
import { Downlink } from '../../../src/agent/audio/downlink.js';
import { EchoGate, type DuplexMode } from '../../../src/agent/audio/echoGate.js';
import { JitterBuffer } from '../../../src/agent/audio/jitterBuffer.js';
import { OpusFrameDecoder, OpusFrameEncoder } from '../../../src/common/audio/opusCodec.js';
import { PortAudioBackend } from '../../../src/agent/audio/portAudioBackend.js';
import { ResilientPlayback } from '../../../src/agent/audio/resilientDevice.js';
import { Uplink } from '../../../src/agent/audio/uplink.js';
import { echoGateStage } from '../../../src/agent/audio/micStages.js';
import { dominantFrequency, goertzelPower, playIntoSink, pulseCli, sleep, startRecording, tone, waitUntil } from '../../support/audioCapture.js';
import { pactl, VIRTUAL } from '../../support/virtualAudio.js';

const backend = new PortAudioBackend();
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Amplitude of one frequency in a signal (a sine of amplitude A gives A). */
const amplitudeAt = (s: Int16Array, f: number, from = 0, to = s.length) => 2 * Math.sqrt(goertzelPower(s, f, from, to));

/** The largest amplitude of frequency f over any 200 ms (10-frame) stretch: robust to when audio started. */
function peakAmplitude(frames: Int16Array[], f: number): number {
  let best = 0;
  for (let i = 0; i + 10 <= frames.length; i++) best = Math.max(best, amplitudeAt(concat(frames.slice(i, i + 10)), f));
  return best;
}

function concat(frames: Int16Array[]): Int16Array {
  const out = new Int16Array(frames.length * 960);
  frames.forEach((f, i) => out.set(f, i * 960));
  return out;
}

/** Sends Opus packets to a downlink as RTP would, one per 20 ms, in the given order. */
async function sendPaced(downlink: Downlink, packets: Buffer[], order: number[], firstSeq: number): Promise<void> {
  for (const i of order) {
    downlink.push({ sequenceNumber: (firstSeq + i) & 0xffff, timestamp: (i * 960) >>> 0, ssrc: 0xabc, payload: packets[i] }, process.hrtime.bigint());
    await sleep(20);
  }
}

function openDownlink(echoGate: EchoGate, decoder = new OpusFrameDecoder()): Downlink {
  const playback: PlaybackDevice = backend.openPlayback('default');
  const downlink = new Downlink({ playback, decoder, jitter: new JitterBuffer(), echoGate });
  cleanups.push(() => downlink.stop());
  return downlink;
}

function openUplink(echoGate: EchoGate): Uplink {
  const capture: CaptureDevice = backend.openCapture('default');
  const uplink = new Uplink({ capture, encoder: new OpusFrameEncoder(), stages: [echoGateStage(echoGate)] });
  cleanups.push(() => uplink.stop());
  return uplink;
}

describe('Uplink -> Downlink on the virtual card', () => {
  it('a tone spoken into the microphone comes out of the speaker after reordering, a loss and a sequence wrap', async () => {
    const uplink = openUplink(new EchoGate({ mode: 'full-duplex' }));
    const packets: Buffer[] = [];
    await uplink.start((opus, samples) => {
      expect(samples).toBe(960);
      packets.push(opus);
    });
    await waitUntil(() => uplink.stats.frames >= 10, 5000, 'the microphone to deliver audio');
    const from = packets.length;
    await playIntoSink(tone(440, 1200), VIRTUAL.micSink).done;
    await uplink.stop();
    const spoken = packets.slice(from);
    expect(spoken.length).toBeGreaterThan(55);
    // The uplink itself: what it sent is the tone.
    const check = new OpusFrameDecoder();
    expect(dominantFrequency(concat(spoken.map((p) => check.decode(p))))).toBe(440);
    expect(uplink.stats.micToWire.count).toBe(uplink.stats.packets);

    // The "network": swap neighbours (reorder), lose packet 20, start near the 16-bit sequence wrap.
    const order: number[] = [];
    for (let i = 0; i + 1 < spoken.length; i += 2) order.push(i + 1, i);
    const lossy = order.filter((i) => i !== 20);
    const downlink = openDownlink(new EchoGate({ mode: 'full-duplex' }));
    await downlink.start();
    await waitUntil(() => downlink.stats.framesSilence >= 25, 5000, 'the speaker to take audio');
    const rec = startRecording(VIRTUAL.speakerMonitor);
    await sleep(100);
    await sendPaced(downlink, spoken, lossy, 65_500);
    await sleep(300);
    const heard = await rec.stop();
    expect(dominantFrequency(heard)).toBe(440);
    let best = 0;
    for (let i = 0; i + 9600 <= heard.length; i += 4800) best = Math.max(best, amplitudeAt(heard, 440, i, i + 9600));
    expect(best).toBeGreaterThan(4000);
    expect(downlink.stats.framesConcealed).toBeGreaterThanOrEqual(1);
    // Nearly every packet plays; on a loaded machine the jitter buffer may trim a frame or two to keep latency down.
    expect(downlink.stats.framesDecoded).toBeGreaterThanOrEqual(Math.floor(0.9 * lossy.length));
    expect(downlink.stats.packetsLate).toBe(0);
    expect(downlink.stats.wireToSpeaker.count).toBeGreaterThan(50);
  });
});

describe('Downlink loss recovery', () => {
  it("regression: a lost packet is played from the next packet's in-band FEC (the downlink's decoder could only conceal it)", async () => {
    // what a far end sends once this device reports loss: SILK with FEC (opusCodec.test.ts measures the quality)
    const enc = new OpusFrameEncoder({ packetLossPercent: 20 });
    const t = tone(440, 2400);
    const packets: Buffer[] = [];
    for (let i = 0; i + 960 <= t.length; i += 960) packets.push(Buffer.from(enc.encode(t.subarray(i, i + 960))));
    // one packet in ten lost, each alone, after the buffer has settled
    const lost = (i: number) => i >= 30 && i % 10 === 5;
    const order = packets.map((_, i) => i).filter((i) => !lost(i));
    const decoder = new OpusFrameDecoder();
    const downlink = openDownlink(new EchoGate({ mode: 'full-duplex' }), decoder);
    await downlink.start();
    await waitUntil(() => downlink.stats.framesSilence >= 25, 5000, 'the speaker to take audio');
    const rec = startRecording(VIRTUAL.speakerMonitor);
    await sleep(100);
    await sendPaced(downlink, packets, order, 100);
    await sleep(300);
    const heard = await rec.stop();
    const losses = packets.length - order.length;
    // the jitter buffer declared the losses with the next packet at hand (a loaded machine may trim one instead)
    expect(downlink.stats.framesFromFec, JSON.stringify(downlink.stats)).toBeGreaterThanOrEqual(losses - 2);
    // and each of those frames was decoded from that packet: the decoder counts a recovery, not a concealment
    expect(decoder.stats.recovered).toBe(downlink.stats.framesFromFec);
    expect(decoder.stats.corrupt).toBe(0);
    expect(dominantFrequency(heard)).toBe(440);
  });
});

describe('Uplink loss protection', () => {
  // Issue #5 (CPU): SILK with in-band FEC cost the agent about half a point of a core more than CELT; it is spent
  // only while the far end reports loss (uplinkLossPolicy.ts, opusCodec.ts).
  it('sends CELT on a clean link, SILK with FEC once the far end reports loss, CELT again after 10 clean reports', async () => {
    const uplink = openUplink(new EchoGate({ mode: 'full-duplex' }));
    const configs: number[] = []; // RFC 6716 TOC configuration: 0-15 SILK or hybrid, 16-31 CELT
    await uplink.start((opus) => configs.push(opus[0] >> 3));
    const voice = playIntoSink(tone(300, 8000), VIRTUAL.micSink);
    cleanups.push(() => voice.stop());
    const next = async (n: number) => {
      const from = configs.length;
      await waitUntil(() => configs.length >= from + n, 5000, 'the microphone to deliver audio');
      return configs.slice(from + 1); // the first may be the switch's transition frame
    };
    expect(uplink.protectedLossPercent).toBe(0);
    expect(Math.min(...(await next(10)))).toBeGreaterThanOrEqual(16);

    uplink.reportLoss(0.1);
    expect(uplink.protectedLossPercent).toBe(10);
    expect(Math.max(...(await next(10)))).toBeLessThan(16);

    for (let i = 0; i < 9; i++) uplink.reportLoss(0);
    expect(uplink.protectedLossPercent).toBe(10); // one clean report is not enough
    uplink.reportLoss(0);
    expect(uplink.protectedLossPercent).toBe(0);
    expect(Math.min(...(await next(10)))).toBeGreaterThanOrEqual(16);
  });
});

describe('echo gate with the speaker routed into the microphone', () => {
  async function assistantSpeaks(mode: DuplexMode): Promise<{ echoAmp: number; userAmp: number; gate: EchoGate }> {
    const moduleId = (await pactl('load-module', 'module-loopback', `source=${VIRTUAL.speakerMonitor}`, `sink=${VIRTUAL.micSink}`, 'latency_msec=20')).trim();
    cleanups.push(() => pactl('unload-module', moduleId));
    const gate = new EchoGate({ mode, tailMs: 300 });
    const downlink = openDownlink(gate);
    const uplink = openUplink(gate);
    // What the peer receives: the uplink's packets, decoded.
    const peer = new OpusFrameDecoder();
    const received: { at: number; frame: Int16Array }[] = [];
    await downlink.start();
    await uplink.start((opus) => received.push({ at: performance.now(), frame: peer.decode(opus) }));
    await waitUntil(() => uplink.stats.frames >= 10 && downlink.stats.framesSilence >= 10, 5000, 'audio to flow both ways');

    // The assistant says 1 s of 1 kHz.
    const enc = new OpusFrameEncoder();
    const speech = tone(1000, 1000);
    const packets = Array.from({ length: 50 }, (_, i) => enc.encode(speech.subarray(i * 960, (i + 1) * 960)));
    const started = performance.now();
    await sendPaced(downlink, packets, packets.map((_, i) => i), 1);
    await sleep(800); // the echo tail plus the gate's own tail
    const assistantDone = performance.now();
    // Then the user speaks (440 Hz) into the microphone.
    await playIntoSink(tone(440, 800), VIRTUAL.micSink).done;
    await sleep(200);

    const during = received.filter((r) => r.at >= started && r.at < assistantDone).map((r) => r.frame);
    const after = received.filter((r) => r.at >= assistantDone).map((r) => r.frame);
    return { echoAmp: peakAmplitude(during, 1000), userAmp: peakAmplitude(after, 440), gate };
  }

  it('half-duplex: the peer receives no echo of the assistant, and the user again after the tail', async () => {
    const { echoAmp, userAmp, gate } = await assistantSpeaks('half-duplex');
    expect(gate.stats.framesSilenced).toBeGreaterThan(50); // 1 s of speech + tail
    expect(echoAmp).toBeLessThan(50);
    expect(userAmp).toBeGreaterThan(4000);
  });

  it('full-duplex: the echo does reach the peer (the check above can fail)', async () => {
    const { echoAmp, userAmp, gate } = await assistantSpeaks('full-duplex');
    expect(gate.stats.framesSilenced).toBe(0);
    expect(echoAmp).toBeGreaterThan(4000);
    expect(userAmp).toBeGreaterThan(4000);
  });
});

describe('Downlink on a speaker that is reopened', () => {
  // Regression: after the speaker was reopened (stream killed, USB card replugged) the new stream had nothing
  // queued and so reported nothing handed; the downlink waited for its 250 ms fallback timer to start playing
  // again. The reopened device now says so (onReady) and the downlink fills it at once.
  it('has a frame queued the moment the speaker is open again, and keeps playing', async () => {
    const playback = new ResilientPlayback({ backend, deviceName: 'default', minBackoffMs: 100, maxBackoffMs: 300 });
    const downlink = new Downlink({ playback, decoder: new OpusFrameDecoder(), jitter: new JitterBuffer(), echoGate: new EchoGate({ mode: 'full-duplex' }) });
    cleanups.push(() => downlink.stop());
    await downlink.start();
    await waitUntil(() => downlink.stats.framesSilence >= 25, 5000, 'the speaker to take audio');
    // What the device holds right after the downlink's own onReady ran, on each reopen.
    const queuedWhenReady: number[] = [];
    const downlinkReady = playback.onReady!;
    playback.onReady = () => {
      downlinkReady();
      queuedWhenReady.push(playback.queuedMs);
    };

    const speakerIndex = (await pactl('list', 'short', 'sinks')).split('\n').find((l) => l.split('\t')[1] === VIRTUAL.speakerSink)!.split('\t')[0];
    const inputs = (await pactl('list', 'sink-inputs')).split(/^Sink Input #/m).slice(1);
    const ours = inputs.filter((b) => new RegExp(`^\\s*Sink: ${speakerIndex}$`, 'm').test(b) && !/module-loopback/.test(b));
    expect(ours.length).toBe(1);
    await pulseCli(`kill-sink-input ${ours[0].split('\n')[0].trim()}`);
    await waitUntil(() => playback.stats.opens >= 2 && playback.state === 'open', 5000, 'the speaker to reopen');

    expect(queuedWhenReady.length).toBe(playback.stats.opens - 1);
    for (const q of queuedWhenReady) expect(q).toBeGreaterThanOrEqual(20);
    const from = downlink.stats.framesSilence;
    await waitUntil(() => downlink.stats.framesSilence >= from + 25, 5000, 'the speaker to play after the reopen');
  });
});

describe('Downlink playout queue on a stalled event loop', () => {
  /** Blocks the event loop (garbage collection, a busy board) for ms. */
  const stall = (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end);
  };

  it('keeps a frame more queued after each underrun of its stream, at most 60 ms, and gives it back after a steady stretch', async () => {
    const playback = backend.openPlayback('default');
    const downlink = new Downlink({ playback, decoder: new OpusFrameDecoder(), jitter: new JitterBuffer(), echoGate: new EchoGate({ mode: 'full-duplex' }), playoutRelaxMs: 3000 });
    cleanups.push(() => downlink.stop());
    await downlink.start();
    await waitUntil(() => downlink.stats.framesSilence >= 25, 5000, 'the speaker to take audio');
    // what the device holds right after each frame handed, as the downlink refilled it
    const queued: number[] = [];
    const handed = playback.onHanded!;
    playback.onHanded = (at) => {
      handed(at);
      queued.push(playback.queuedMs);
    };
    // three stalls, each its own episode (over 1 s apart): one frame more for each, up to three frames
    const grown: number[] = [];
    for (let i = 0; i < 3; i++) {
      const before = { underruns: downlink.stats.speakerUnderruns, grows: downlink.stats.playoutQueueGrows, target: downlink.playoutQueueMs };
      stall(150); // the speaker runs dry: one frame queued covers 20 ms; the stall starves several callbacks
      await waitUntil(() => downlink.stats.speakerUnderruns > before.underruns, 2000, 'the stall to be counted as an underrun');
      await sleep(300);
      grown.push(downlink.stats.playoutQueueGrows - before.grows);
      if (before.target < 60) expect(downlink.playoutQueueMs, `stall ${i + 1}`).toBe(before.target + 20);
      await sleep(900);
    }
    expect(downlink.playoutQueueMs).toBe(60);
    expect(grown.slice(0, 2)).toEqual([1, 1]); // one growth per stall, not one per starved callback
    expect(downlink.stats.playoutQueueGrows).toBe(2);
    // and the device really held it: three frames after a frame was handed
    queued.length = 0;
    await sleep(300);
    expect(Math.max(...queued), `queued after each frame handed: ${queued.join(' ')}`).toBe(60);
    // a steady stretch (3 s here, 30 s by default) gives the frames back, one at a time
    await waitUntil(() => downlink.playoutQueueMs === 20, 12_000, 'the queue to shrink back to one frame');
    queued.length = 0;
    await sleep(300);
    expect(Math.max(...queued), `queued after each frame handed: ${queued.join(' ')}`).toBe(20);
    expect(downlink.stats.framesSilence).toBeGreaterThan(0);
  });
});

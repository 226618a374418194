// The agent's sound path, opened once for the whole run and shared by successive calls: the audio engineer's
// Uplink (mic -> stages: echo canceller -> echo gate -> Opus) and Downlink (RTP -> jitter buffer -> Opus -> speaker), wired to the
// configured devices. Between calls the uplink has no sink, so nothing is encoded. The devices are resilient:
// a busy, missing or failing card is reopened in the background while the call stays up.
import type { Logger } from '../common/logger.js';
import type { AudioBackend } from './audio/audioDevice.js';
import { Downlink } from './audio/downlink.js';
import { EchoCanceller, type AecStats } from './audio/echoCanceller.js';
import { EchoGate } from './audio/echoGate.js';
import { EchoReference } from './audio/echoReference.js';
import { JitterBuffer } from './audio/jitterBuffer.js';
import { OpusFrameDecoder, OpusFrameEncoder } from '../common/audio/opusCodec.js';
import { ResilientCapture, ResilientPlayback, type DeviceState } from './audio/resilientDevice.js';
import { echoCancelStage, echoGateStage, type MicStage } from './audio/micStages.js';
import { Uplink, type PacketSink } from './audio/uplink.js';
import { WakeGate } from './audio/wakeGate.js';
import { EarconPlayer } from './audio/earcons.js';
import { AgentError } from './errors.js';
import type { Settings } from './settings.js';
import type { InboundRtp } from './transport/transportLayer.js';

export interface CallAudio {
  /** where microphone packets go; undefined between calls */
  setSink(sink: PacketSink | undefined): void;
  /** an inbound RTP packet from the call */
  push(packet: InboundRtp, receivedAtNs: bigint): void;
  /** the call ended: what is buffered for the speaker is dropped */
  resetDownlink(): void;
  readonly uplink: Uplink;
  readonly downlink: Downlink;
  /** open | opening | retrying | closed, for status */
  deviceStates(): { microphone: DeviceState; speaker: DeviceState };
  /** the echo canceller's state, delay and echo reduction; undefined when it does not run (duplex half/full) */
  echoCanceller(): AecStats | undefined;
  /** listening (issue #16): the stage that holds the microphone until listening opens, and the earcons */
  readonly wakeGate: WakeGate;
  readonly earcons: EarconPlayer;
  /** privacy mute: false stops (closes) the capture device, true opens it again */
  setMicrophoneOpen(open: boolean): Promise<void>;
  /** whether the microphone's audio captured between `fromAgoMs` and `toAgoMs` ago held the speaker's sound
   *  uncancelled: the speaker played (or its echo tail ran) then, the gate half duplex (duplex half; auto before the
   *  canceller converged), and the microphone hears the speaker (auto: not when no echo was ever found) */
  heardSpeakerUncancelled(fromAgoMs: number, toAgoMs: number): boolean;
  close(): Promise<void>;
}

export interface ListeningAudioOptions {
  /** pre-roll of the wake gate (ms) */
  preRollMs: number;
  /** the latest a wake event may come after its phrase ended and still open with its pre-roll (ms): the gate's
   *  ring keeps pre-roll + this much audio (48 kHz: ~96 KB a second) */
  maxWakeLatencyMs?: number;
  /** the gate starts open (mode `always`) */
  gateOpen: boolean;
  /** the capture device is not opened at all (privacy mute kept from the last run) */
  microphoneMuted: boolean;
  earcons: EarconPlayer;
  onServiceAudio?: (audible: boolean) => void;
}

export async function openCallAudio(o: { backend: AudioBackend; settings: Settings['audio']; logger: Logger; listening?: ListeningAudioOptions }): Promise<CallAudio> {
  const l = o.listening ?? { preRollMs: 0, gateOpen: true, microphoneMuted: false, earcons: new EarconPlayer({}) };
  const echoGate = new EchoGate({ mode: o.settings.duplex === 'full' ? 'full-duplex' : 'half-duplex', tailMs: o.settings.echoTailMs });
  const aec = o.settings.duplex === 'auto' ? openEchoCanceller(o.logger) : undefined;
  const speaker = new ResilientPlayback({ backend: o.backend, deviceName: o.settings.playbackDevice, logger: o.logger });
  const microphone = new ResilientCapture({ backend: o.backend, deviceName: o.settings.captureDevice, logger: o.logger });
  const decoder = new OpusFrameDecoder();
  const downlink = new Downlink({
    playback: speaker,
    decoder,
    jitter: new JitterBuffer(),
    echoGate,
    echoReference: aec?.reference,
    logger: o.logger,
    overlay: l.earcons,
    onServiceAudio: l.onServiceAudio,
  });
  const wakeGate = new WakeGate({ preRollMs: l.preRollMs, maxDetectLatencyMs: l.maxWakeLatencyMs, open: l.gateOpen });
  // The microphone path, assembled here only (micStages.ts): an echo canceller or a wake word tap goes in this list.
  const stages: MicStage[] = [wakeGate, echoGateStage(echoGate)];
  // the canceller first: it adapts on every frame (also while idle), and the wake word engine hears its output
  if (aec) stages.unshift(echoCancelStage(aec.canceller, echoGate));
  const uplink = new Uplink({ capture: microphone, encoder: new OpusFrameEncoder(), stages, logger: o.logger });
  try {
    await downlink.start();
    if (!l.microphoneMuted) await uplink.start(undefined);
  } catch (err) {
    await uplink.stop().catch(() => undefined);
    await downlink.stop().catch(() => undefined);
    decoder.close();
    aec?.canceller.close();
    aec?.reference.close();
    throw new AgentError(
      'audio',
      `cannot open the sound card (capture "${o.settings.captureDevice}", playback "${o.settings.playbackDevice}"): ${(err as Error).message}`,
      { cause: err },
    );
  }
  let currentSink: PacketSink | undefined;
  return {
    uplink,
    downlink,
    deviceStates: () => ({ microphone: microphone.state, speaker: speaker.state }),
    echoCanceller: () => aec?.canceller.stats(),
    wakeGate,
    earcons: l.earcons,
    setSink: (sink) => {
      currentSink = sink;
      uplink.setSink(sink);
    },
    setMicrophoneOpen: async (open) => {
      if (open) await uplink.start(currentSink);
      else await uplink.stop();
      uplink.setSink(currentSink); // stop() forgets the sink; the keep-alive still needs it while muted
    },
    // auto with no echo found after seconds of the far end (echoSpanMs undefined): the microphone does not hear
    // the speaker, so the speaker cannot say the wake word to it
    heardSpeakerUncancelled: (fromAgoMs, toAgoMs) => (!aec || aec.canceller.echoSpanMs !== undefined) && echoGate.heardPlaybackBetween(fromAgoMs, toAgoMs),
    push: (p, ns) => downlink.push(p, ns),
    resetDownlink: () => downlink.resetStream(),
    close: async () => {
      await uplink.stop();
      await downlink.stop();
      decoder.close(); // its C memory now, not when V8 happens to collect the wrapper
      aec?.canceller.close();
      aec?.reference.close();
    },
  };
}

/** The canceller for audio.duplex auto; without libspeexdsp the agent says why once and keeps the gate (half). */
function openEchoCanceller(logger: Logger): { reference: EchoReference; canceller: EchoCanceller } | undefined {
  try {
    const reference = new EchoReference({ rate: 16_000 });
    return { reference, canceller: new EchoCanceller({ reference, logger }) };
  } catch (err) {
    logger.warn({ err: (err as Error).message }, 'echo canceller unavailable: the microphone is gated while the speaker plays (half duplex)');
    return undefined;
  }
}

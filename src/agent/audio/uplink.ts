// Microphone -> wire: capture frame -> the stages (micStages.ts: echo gate...) -> Opus encode -> the sink (the
// call's RTP sender).
//
// Lifetime: the capture device stays open for the agent's whole run, across calls and reconnects (reopening
// ALSA devices is slow and is where "Device or resource busy" happens). Between calls the call engineer's code
// sets no sink (setSink(undefined)): frames are then dropped before encoding, which costs almost nothing.
import type { Logger } from '../../common/logger.js';
import { silentLogger } from '../../common/logger.js';
import type { CaptureDevice } from './audioDevice.js';
import type { MicFrame, MicStage } from './micStages.js';
import { LatencyRecorder } from './latencyRecorder.js';
import { FRAME_SAMPLES } from '../../protocol/media.js';
import { OpusFrameEncoder } from '../../common/audio/opusCodec.js';
import { UplinkLossPolicy } from './uplinkLossPolicy.js';

/** Where the microphone's Opus packets go: the call's RTP sender. */
export type PacketSink = (opus: Buffer, rtpSamples: number, capturedAtNs: bigint) => void;

/** With nothing sent for this long (wake gate closed, microphone muted), keepAlive() sends one silent packet. */
export const KEEP_ALIVE_MS = 400;

export interface UplinkOptions {
  capture: CaptureDevice;
  encoder: OpusFrameEncoder;
  /** what each frame goes through before it is encoded, in order */
  stages: readonly MicStage[];
  logger?: Logger;
}

export class Uplink {
  private readonly capture: CaptureDevice;
  private readonly encoder: OpusFrameEncoder;
  private readonly stages: readonly MicStage[];
  /** One frame object for the whole run: no allocation per frame (50 a second). */
  private readonly frame: MicFrame = { pcm: new Int16Array(0), capturedAtNs: 0n };
  private readonly log: Logger;
  private sink: PacketSink | undefined;
  private running = false;
  private sinkErrorLogged = false;
  private readonly lossPolicy = new UplinkLossPolicy();
  /** hrtime (ns) of the last packet handed to the sink */
  private lastSentNs = 0n;
  private silencePacket: Buffer | undefined;
  readonly stats = {
    frames: 0,
    packets: 0,
    /** frames a stage let through no audio for (nothing sent) */
    held: 0,
    /** frames dropped because no call was there to take them */
    droppedNoSink: 0,
    sinkErrors: 0,
    /** silent keep-alive packets sent while the microphone was held or closed */
    keepAlives: 0,
    /** capture callback (frame delivered to JS) -> after the sink returned (packet handed to the RTP sender) */
    micToWire: new LatencyRecorder(),
  };

  constructor(opts: UplinkOptions) {
    this.capture = opts.capture;
    this.encoder = opts.encoder;
    this.stages = opts.stages;
    this.log = opts.logger ?? silentLogger;
  }

  /** Opens the microphone. Packets go to onPacket (if given) until setSink() changes it. */
  async start(onPacket?: PacketSink): Promise<void> {
    if (this.running) return;
    this.sink = onPacket;
    await this.capture.start((frame, at) => this.onFrame(frame, at));
    this.running = true;
  }

  /** Where packets go; undefined drops them (no call). */
  setSink(onPacket: PacketSink | undefined): void {
    this.sink = onPacket;
    this.sinkErrorLogged = false;
  }

  /** The far end's report of the fraction of our packets it lost (RTCP): sets the encoder's loss protection.
   *  Kept across calls: a reconnect is often the network's doing, and the next call's reports correct it. */
  reportLoss(fractionLost: number): void {
    const percent = this.lossPolicy.report(fractionLost);
    if (percent === undefined) return;
    this.encoder.setExpectedLoss(percent);
    if (percent > 0) this.log.info({ fractionLost, protectPercent: percent }, 'uplink: the far end loses packets; sending Opus with in-band FEC');
    else this.log.info('uplink: no more loss reported; back to Opus without FEC (less CPU)');
  }

  /** Loss the microphone's encoding protects against now, in percent (0: none). */
  get protectedLossPercent(): number {
    return this.encoder.expectedLoss;
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.sink = undefined;
    await this.capture.stop();
  }

  /**
   * Sends one Opus packet of digital silence when nothing was sent for KEEP_ALIVE_MS (the wake gate holds the
   * microphone, or it is muted and closed). Like Opus DTX: the RTP timestamp advances by the time that passed,
   * so the stream stays in time; the service's idle timeout and NAT bindings see a live peer, its VAD hears
   * silence. Call it from a slow timer (agent.ts: the shared 250 ms one). Never microphone audio.
   */
  keepAlive(nowNs: bigint = process.hrtime.bigint()): boolean {
    const sink = this.sink;
    if (!sink) return false;
    const quietMs = Number(nowNs - this.lastSentNs) / 1e6;
    if (quietMs < KEEP_ALIVE_MS) return false;
    // A fresh encoder's packet for a zero frame: decodes to exact zeros on every receiver.
    this.silencePacket ??= new OpusFrameEncoder().encode(new Int16Array(FRAME_SAMPLES));
    const frames = this.lastSentNs === 0n ? 1 : Math.max(1, Math.min(50, Math.round(quietMs / 20)));
    if (!this.send(sink, this.silencePacket, frames * FRAME_SAMPLES, nowNs)) return false;
    this.stats.keepAlives++;
    return true;
  }

  private onFrame(pcm: Int16Array, capturedAtNs: bigint): void {
    this.stats.frames++;
    const sink = this.sink;
    this.frame.pcm = pcm;
    this.frame.capturedAtNs = capturedAtNs;
    // Without a call the stages still run (the canceller adapts, the wake word engine listens: a wake word said
    // while offline gets the "unreachable" earcon); nothing is encoded or sent.
    this.runFrom(0, this.frame, sink);
    if (!sink) return;
    // A stage with a backlog (the wake gate's pre-roll) sends one more frame per captured frame.
    for (let i = 0; i < this.stages.length; i++) {
      const extra = this.stages[i].flush?.();
      if (extra) this.runFrom(i + 1, extra, sink);
    }
  }

  private runFrom(start: number, first: MicFrame, sink: PacketSink | undefined): void {
    let frame: MicFrame | undefined = first;
    for (let i = start; i < this.stages.length; i++) {
      frame = this.stages[i].process(frame);
      if (!frame) {
        this.stats.held++;
        return;
      }
    }
    if (!sink) {
      this.stats.droppedNoSink++;
      return;
    }
    const capturedAtNs = frame.capturedAtNs;
    if (!this.send(sink, this.encoder.encode(frame.pcm), FRAME_SAMPLES, capturedAtNs)) return;
    this.stats.packets++;
    this.stats.micToWire.recordNs(this.lastSentNs - capturedAtNs);
  }

  private send(sink: PacketSink, packet: Buffer, samples: number, capturedAtNs: bigint): boolean {
    try {
      sink(packet, samples, capturedAtNs);
    } catch (err) {
      this.stats.sinkErrors++;
      if (!this.sinkErrorLogged) {
        this.sinkErrorLogged = true; // once per sink, not once per frame
        this.log.warn({ err }, 'uplink: the packet sink failed; dropping microphone packets until the call changes');
      }
      return false;
    }
    this.lastSentNs = process.hrtime.bigint();
    return true;
  }
}

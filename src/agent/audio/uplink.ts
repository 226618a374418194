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
import type { OpusFrameEncoder } from '../../common/audio/opusCodec.js';
import { UplinkLossPolicy } from './uplinkLossPolicy.js';

/** Where the microphone's Opus packets go: the call's RTP sender. */
export type PacketSink = (opus: Buffer, rtpSamples: typeof FRAME_SAMPLES, capturedAtNs: bigint) => void;

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
  readonly stats = {
    frames: 0,
    packets: 0,
    /** frames a stage let through no audio for (nothing sent) */
    held: 0,
    /** frames dropped because no call was there to take them */
    droppedNoSink: 0,
    sinkErrors: 0,
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

  private onFrame(pcm: Int16Array, capturedAtNs: bigint): void {
    this.stats.frames++;
    const sink = this.sink;
    if (!sink) {
      this.stats.droppedNoSink++;
      return;
    }
    let frame: MicFrame | undefined = this.frame;
    frame.pcm = pcm;
    frame.capturedAtNs = capturedAtNs;
    for (const stage of this.stages) {
      frame = stage.process(frame);
      if (!frame) {
        this.stats.held++;
        return;
      }
    }
    const packet = this.encoder.encode(frame.pcm);
    try {
      sink(packet, FRAME_SAMPLES, capturedAtNs);
    } catch (err) {
      this.stats.sinkErrors++;
      if (!this.sinkErrorLogged) {
        this.sinkErrorLogged = true; // once per sink, not once per frame
        this.log.warn({ err }, 'uplink: the packet sink failed; dropping microphone packets until the call changes');
      }
      return;
    }
    this.stats.packets++;
    this.stats.micToWire.recordNs(process.hrtime.bigint() - capturedAtNs);
  }
}

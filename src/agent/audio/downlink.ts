// Wire -> speaker: RTP packets -> jitter buffer -> Opus decode (or concealment) -> playback device.
//
// Playout is paced by the sound card's own clock, not by a JS timer: each time the playback device has taken
// a frame (onHanded), the next 20 ms frame is produced and written. A timer cannot drift against the card that
// way, and only one frame ever waits in our queue. When the device has been reopened (onReady), its new stream
// has nothing queued and would report nothing handed, so the chain is restarted there at once. A slow
// fallback timer (250 ms, shared with the other periodic checks in sharedInterval.ts) is only a backstop for a
// device that reopens without saying so. It is not a pacing clock: a 20 ms timer was half the agent's
// wake-ups during a call (issue #5, CPU), so a PlaybackDevice must report onHanded. With nothing to play,
// silence is written all the same: each frame handed is what keeps the chain (and so the timing of the next
// real frame) going.
// Wire-to-speaker latency is therefore the packet's wait in the jitter buffer (below its target, 20 ms on a
// clean link: how long depends on where in the card's 20 ms period it arrived) plus the one frame waiting for
// the device (20 ms): 20-40 ms, p50 about 30 ms on a clean link.
// One frame waiting is also all that covers a stalled event loop (garbage collection, a busy board): a stall
// longer than it and the speaker plays silence (an underrun), a click for the listener and a jump of the echo
// path for the canceller. So the queue adapts as Android's AAudio guide tunes its buffer (grow on an underrun,
// never guess ahead): each underrun of our stream adds a frame, up to PLAYOUT_MAX_MS, and a stretch of
// PLAYOUT_RELAX_MS without one gives a frame back. A board that never stalls keeps the 20 ms. Silence the sound
// server played below us (dacClock.ts) is not ours to cover: a deeper queue in front of a late audio thread
// changes nothing.
// The echo gate is told about every frame, so the uplink mutes the microphone while the assistant is audible, and
// so is the echo canceller's reference (echoReference.ts): the frame and when it will be heard.
import type { Logger } from '../../common/logger.js';
import { silentLogger } from '../../common/logger.js';
import { everyMs, type SharedInterval } from '../../common/sharedInterval.js';
import { FRAME_SAMPLES } from '../../protocol/media.js';
import type { PlaybackDevice } from './audioDevice.js';
import { isAudible, type EchoGate } from './echoGate.js';
import type { EchoReference } from './echoReference.js';
import type { JitterBuffer, RtpAudioPacket } from './jitterBuffer.js';
import { LatencyRecorder } from './latencyRecorder.js';
import type { OpusFrameDecoder } from '../../common/audio/opusCodec.js';

export interface DownlinkOptions {
  playback: PlaybackDevice;
  decoder: OpusFrameDecoder;
  jitter: JitterBuffer;
  echoGate: EchoGate;
  /** the echo canceller's record of what was played (audio.duplex auto) */
  echoReference?: EchoReference;
  logger?: Logger;
  /** mixed into every frame written (earcons.ts): the agent's own sounds go out of the same stream, so the
   *  echo gate / canceller sees them */
  overlay?: { mix(frame: Int16Array): Int16Array };
  /** told for every frame of the service's stream whether it was audible (listening.ts: `speaking`) */
  onServiceAudio?: (audible: boolean) => void;
  /** played ms without an underrun before the queue gives a frame back (default 30 s) */
  playoutRelaxMs?: number;
}

const FIFO = 64;
/** The frames kept queued for the device: one on a board that never stalls, at most three (see the top). */
export const PLAYOUT_MIN_MS = 20;
export const PLAYOUT_MAX_MS = 60;
/** A stretch without an underrun after which the queue gives a frame back (default; DownlinkOptions). */
const PLAYOUT_RELAX_MS = 30_000;
/** A stream's first frames handed, whose underruns do not count: its start takes frames back to back to fill the
 *  device's buffer (every call's first second showed two "underruns" at once on the virtual card, none after). */
const START_FRAMES = 25;
/** One stall is one underrun: the callbacks it starved in a row grow the queue once (an event loop stalled for
 *  100 ms starves five of them). */
const EPISODE_FRAMES = 50;
/** How often the fallback timer checks that the device has a frame waiting (see the top). */
const FALLBACK_FILL_MS = 250;

export class Downlink {
  private readonly playback: PlaybackDevice;
  private readonly decoder: OpusFrameDecoder;
  private readonly jitter: JitterBuffer;
  private readonly echoGate: EchoGate;
  private readonly echoReference: EchoReference | undefined;
  private readonly log: Logger;
  private readonly overlay: DownlinkOptions['overlay'];
  private readonly onServiceAudio: DownlinkOptions['onServiceAudio'];
  private readonly silence = new Int16Array(FRAME_SAMPLES);
  private fallback: SharedInterval | undefined;
  private running = false;
  // receivedAtNs of each frame written and not yet handed (0n for silence/concealment), for latency.
  private readonly pendingReceivedAt = new BigInt64Array(FIFO);
  private pendingHead = 0;
  private pendingCount = 0;
  /** what fill() keeps queued for the device (PLAYOUT_MIN_MS..PLAYOUT_MAX_MS, see the top) */
  private queueTargetMs = PLAYOUT_MIN_MS;
  /** playout queue growths since the call began (resetStream): only the first is logged at info */
  private growsThisCall = 0;
  private readonly relaxFrames: number;
  /** frames handed since the last underrun (or the last relaxation) */
  private steadyFrames = 0;
  /** the device's own underrun count last seen (it restarts from 0 when the device reopens) */
  private underrunsSeen = 0;
  /** frames handed since the device (re)started, and at the queue's last growth */
  private handedSinceStart = 0;
  private handedAtGrowth = -EPISODE_FRAMES;
  readonly stats = {
    packetsIn: 0,
    packetsLate: 0,
    packetsDuplicate: 0,
    streamResets: 0,
    framesDecoded: 0,
    /** lost frames: concealed, or decoded through the next packet (framesFromFec of them: from its in-band FEC
     *  where it carries one, concealed by libopus where not) */
    framesConcealed: 0,
    framesFromFec: 0,
    framesSilence: 0,
    /** underruns of our stream (the device played silence for want of a frame) and the queue grown for them */
    speakerUnderruns: 0,
    playoutQueueGrows: 0,
    /** RTP packet received (push) -> its decoded frame handed to the audio system (PortAudio's queue) */
    wireToSpeaker: new LatencyRecorder(),
  };

  constructor(opts: DownlinkOptions) {
    this.playback = opts.playback;
    this.decoder = opts.decoder;
    this.jitter = opts.jitter;
    this.echoGate = opts.echoGate;
    this.echoReference = opts.echoReference;
    this.log = opts.logger ?? silentLogger;
    this.overlay = opts.overlay;
    this.onServiceAudio = opts.onServiceAudio;
    this.relaxFrames = Math.max(1, Math.round((opts.playoutRelaxMs ?? PLAYOUT_RELAX_MS) / 20));
  }

  /** The audio kept queued for the device now (ms): 20, more after underruns (see the top). */
  get playoutQueueMs(): number {
    return this.queueTargetMs;
  }

  /** Hands one received RTP packet to the jitter buffer. Cheap; never blocks. */
  push(rtp: RtpAudioPacket, receivedAtNs: bigint): void {
    this.stats.packetsIn++;
    const r = this.jitter.push(rtp, receivedAtNs, Number(receivedAtNs) / 1e6);
    if (r === 'late') this.stats.packetsLate++;
    else if (r === 'duplicate') this.stats.packetsDuplicate++;
    else if (r === 'reset') {
      this.stats.streamResets++;
      this.decoder.reset();
      this.log.info({ ssrc: rtp.ssrc }, 'downlink: new audio stream, jitter buffer and decoder reset');
    }
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.playback.onHanded = (at) => this.onHanded(at);
    this.playback.onStarved = (ms, queuedMs) => this.onStarved(ms, queuedMs);
    this.playback.onReady = () => this.onReady();
    this.handedSinceStart = 0;
    this.handedAtGrowth = -EPISODE_FRAMES;
    await this.playback.start();
    this.running = true;
    this.fill();
    this.fallback = everyMs(FALLBACK_FILL_MS, () => this.fill());
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.fallback?.stop();
    this.fallback = undefined;
    this.playback.onReady = undefined;
    this.pendingCount = 0;
    await this.playback.stop();
  }

  /** Forget the current stream (the call ended): what is buffered is not played. */
  resetStream(): void {
    this.jitter.reset();
    this.decoder.reset();
    this.growsThisCall = 0;
  }

  // The frames the old stream held are gone with it: they will never be reported handed.
  private onReady(): void {
    this.pendingCount = 0;
    this.handedSinceStart = 0;
    this.handedAtGrowth = -EPISODE_FRAMES;
    this.fill();
  }

  private onStarved(ms: number, queuedMs: number): void {
    this.echoReference?.noteStarved(ms, queuedMs);
    // ours only when the device counted an underrun of its stream (silence below comes without one)
    const underruns = this.playback.underruns ?? 0;
    if (underruns === this.underrunsSeen) return;
    const ours = underruns > this.underrunsSeen;
    this.underrunsSeen = underruns;
    if (!ours || this.handedSinceStart < START_FRAMES) return; // a reopened device counts from 0 again
    this.stats.speakerUnderruns++;
    this.steadyFrames = 0;
    if (this.queueTargetMs >= PLAYOUT_MAX_MS || this.handedSinceStart - this.handedAtGrowth < EPISODE_FRAMES) return;
    this.handedAtGrowth = this.handedSinceStart;
    this.queueTargetMs += 20;
    this.stats.playoutQueueGrows++;
    // Once per call at info, then debug: on a busy board it came ~40 times an hour, the only line a speaker idle in
    // a call wrote to the journal (an SD-card review); the count is in the stats (bench, status of the canceller).
    const line = { silenceMs: ms, queueMs: this.queueTargetMs, growsThisCall: ++this.growsThisCall };
    if (this.growsThisCall === 1) this.log.info(line, 'speaker underrun (the event loop was late): keeping more audio queued (said once per call)');
    else this.log.debug(line, 'speaker underrun (the event loop was late): keeping more audio queued');
  }

  private onHanded(atNs: bigint): void {
    this.handedSinceStart++;
    if (this.queueTargetMs > PLAYOUT_MIN_MS && ++this.steadyFrames >= this.relaxFrames) {
      this.steadyFrames = 0;
      this.queueTargetMs -= 20;
    }
    if (this.pendingCount > 0) {
      const received = this.pendingReceivedAt[this.pendingHead];
      this.pendingHead = (this.pendingHead + 1) % FIFO;
      this.pendingCount--;
      if (received !== 0n) this.stats.wireToSpeaker.recordNs(atNs - received);
    }
    this.fill();
  }

  /** Keeps the queue's target (one frame, more after underruns) waiting for the device. */
  private fill(): void {
    if (!this.running) return;
    while (this.playback.queuedMs < this.queueTargetMs) {
      if (!this.writeNextFrame()) return;
    }
  }

  private writeNextFrame(): boolean {
    const item = this.jitter.pop();
    let frame: Int16Array;
    let receivedAt = 0n;
    if (item.kind === 'packet') {
      frame = this.decoder.decode(item.payload);
      receivedAt = item.receivedAtNs;
      this.stats.framesDecoded++;
    } else if (item.kind === 'lost') {
      // the next packet already here: the lost frame from its in-band FEC (concealed where it carries none)
      frame = item.next ? this.decoder.recover(item.next) : this.decoder.conceal();
      this.stats.framesConcealed++;
      if (item.next) this.stats.framesFromFec++;
    } else {
      frame = this.silence;
      this.stats.framesSilence++;
    }
    this.onServiceAudio?.(item.kind !== 'empty' && isAudible(frame, this.echoGate.audibleRms));
    // The half-duplex gate follows the service's audio only: gating the microphone for the agent's own earcon
    // would cut the command said right after the wake word ("computer, set the volume..."), pre-roll included.
    // What is written (and what an echo canceller's reference records) is the mix.
    this.echoGate.notePlayback(frame, this.playback.queuedMs);
    if (this.overlay) frame = this.overlay.mix(frame);
    this.echoReference?.notePlayback(frame, this.playback.queuedMs);
    const before = this.playback.queuedMs;
    this.playback.write(frame);
    if (this.pendingCount === FIFO) {
      this.pendingHead = (this.pendingHead + 1) % FIFO;
      this.pendingCount--;
    }
    this.pendingReceivedAt[(this.pendingHead + this.pendingCount) % FIFO] = receivedAt;
    this.pendingCount++;
    // A device that did not take the frame (stopped, failed) must not make this loop spin.
    return this.playback.queuedMs > before || this.playback.queuedMs >= this.queueTargetMs;
  }
}

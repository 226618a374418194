// The microphone path as a chain of stages over one frame type:
//   capture -> [echo canceller] -> [wake word tap, pre-roll] -> gate -> encoder -> call
// The Uplink runs every captured frame through its stages in order, then encodes what comes out and hands the
// packet to the call. callAudio.ts assembles the list: a new stage is one more entry there, the others untouched.
import type { EchoCanceller } from './echoCanceller.js';
import type { EchoGate } from './echoGate.js';

/** One microphone frame: 20 ms of mono s16 at 48 kHz (FRAME_SAMPLES) and the hrtime (ns) the card delivered it.
 *  The pcm buffer may be reused once the frame has passed: a stage that keeps audio copies it. */
export interface MicFrame {
  pcm: Int16Array;
  capturedAtNs: bigint;
}

export interface MicStage {
  /** The frame to pass on (this one, its pcm changed or replaced as the stage needs), or undefined to send
   *  nothing for it (e.g. before a wake word). */
  process(frame: MicFrame): MicFrame | undefined;
  /** Optional: one more frame this stage has ready (a backlog draining, e.g. the wake gate's pre-roll). The
   *  Uplink asks once per captured frame, after process(), and runs it through the stages after this one. */
  flush?(): MicFrame | undefined;
}

/**
 * The acoustic echo canceller as a stage, before the gate (audio.duplex auto): the microphone goes out with the
 * speaker's echo removed. The canceller also sets the gate's mode: open (full duplex) while it is converged,
 * half duplex while it has no reliable delay yet, is still adapting, or has diverged; the canceller logs each
 * change once, with its reason.
 */
export function echoCancelStage(canceller: EchoCanceller, gate: EchoGate): MicStage {
  const follow = () => (gate.mode = canceller.currentState === 'converged' ? 'full-duplex' : 'half-duplex');
  follow();
  canceller.onState = follow;
  // The gate's tail (settings echoTailMs, 200 ms) is a guess at the echo path; the gate holds at least as long as
  // the echo lasts: as the canceller measured it, and before that the longest path it looks for. A speaker with more
  // latency (USB, a sound server's buffer) otherwise sends the end of every word's echo, and its reverberation, in
  // each pause before convergence. Only the service's first second or so of speech in a call is gated that long
  // (the delay is found within it; a microphone that does not hear the speaker goes back to the configured tail
  // after 5 s of it), and earcons never gate (downlink.ts).
  const configuredTailMs = gate.tailMs;
  return {
    process(frame) {
      frame.pcm = canceller.process(frame.pcm, frame.capturedAtNs);
      gate.tailMs = Math.max(configuredTailMs, Math.ceil(canceller.echoSpanMs ?? 0));
      return frame;
    },
  };
}

/** The half-duplex echo gate as a stage: silence instead of the microphone while the assistant is audible. */
export function echoGateStage(gate: EchoGate): MicStage {
  return {
    process(frame) {
      frame.pcm = gate.filter(frame.pcm, Number(process.hrtime.bigint() - frame.capturedAtNs) / 1e6);
      return frame;
    },
  };
}

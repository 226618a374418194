// Half-duplex gate logic with an injected clock (the real-audio echo test is in links.test.ts).
import { describe, expect, it } from 'vitest';
import { EchoGate, isAudible } from '../../../src/agent/audio/echoGate.js';

const loud = () => new Int16Array(960).fill(3000);
const quiet = () => new Int16Array(960).fill(20);
const mic = () => new Int16Array(960).fill(1234);

describe('EchoGate', () => {
  it('sends silence while audible audio plays and for the tail after it, then the microphone again', () => {
    let now = 1000;
    const gate = new EchoGate({ tailMs: 300, nowMs: () => now });
    expect(gate.filter(mic())[0]).toBe(1234);
    gate.notePlayback(loud(), 40); // heard from 1040 to 1060
    expect(gate.filter(mic())[0]).toBe(0);
    now = 1060 + 299;
    expect(gate.gating).toBe(true);
    expect(gate.filter(mic()).every((s) => s === 0)).toBe(true);
    now = 1060 + 301;
    expect(gate.gating).toBe(false);
    expect(gate.filter(mic())[0]).toBe(1234);
    expect(gate.stats).toEqual({ framesPassed: 2, framesSilenced: 2 });
  });

  it('heardPlaybackBetween: whether a stretch of the microphone overlaps playback or its tail (the wake word guard)', () => {
    let now = 1000;
    const gate = new EchoGate({ tailMs: 200, nowMs: () => now });
    gate.notePlayback(loud(), 0); // 1000-1020
    now = 1020;
    gate.notePlayback(loud(), 0); // 1020-1040: joined with the frame before
    now = 3000;
    gate.notePlayback(loud(), 0); // a second span: 3000-3020
    now = 4000;
    // a stretch ending after a span started and starting before its tail ended overlaps it; isGated, which asks
    // only whether playback had ended, could not tell a stretch before the first span from one inside it
    expect(gate.heardPlaybackBetween(3100, 3050)).toBe(false); // 900-950: before any playback
    expect(gate.heardPlaybackBetween(3050, 2990)).toBe(true); // 950-1010
    expect(gate.heardPlaybackBetween(2990, 2900)).toBe(true); // 1010-1100: inside the tail (to 1240)
    expect(gate.heardPlaybackBetween(2700, 1100)).toBe(false); // 1300-2900: between the spans
    expect(gate.heardPlaybackBetween(1100, 900)).toBe(true); // 2900-3100: the second span
    expect(gate.heardPlaybackBetween(700, 0)).toBe(false); // 3300-4000: after it and its tail
    gate.mode = 'full-duplex'; // the echo is cancelled: never
    expect(gate.heardPlaybackBetween(1100, 900)).toBe(false);
    gate.mode = 'half-duplex';
    gate.reset();
    expect(gate.heardPlaybackBetween(1100, 900)).toBe(false);
  });

  it('judges a frame by when it was captured: one captured inside the tail stays silent when filtered after it', () => {
    let now = 1000;
    const gate = new EchoGate({ tailMs: 300, nowMs: () => now });
    gate.notePlayback(loud(), 0); // heard until 1020, gated until 1320
    now = 1330; // the pair's second frame ends now; the first was captured 20 ms earlier, at 1310
    expect(gate.filter(mic(), 20)[0]).toBe(0);
    expect(gate.filter(mic(), 0)[0]).toBe(1234);
  });

  it('ignores silent or near-silent playback (comfort noise)', () => {
    let now = 0;
    const gate = new EchoGate({ nowMs: () => now });
    expect(gate.notePlayback(quiet())).toBe(false);
    expect(gate.notePlayback(new Int16Array(960))).toBe(false);
    now = 1;
    expect(gate.gating).toBe(false);
  });

  it('passes the microphone through in full-duplex mode', () => {
    const gate = new EchoGate({ mode: 'full-duplex', nowMs: () => 0 });
    gate.notePlayback(loud());
    expect(gate.gating).toBe(false);
    expect(gate.filter(mic())[0]).toBe(1234);
  });

  it('reset forgets playback history', () => {
    const gate = new EchoGate({ nowMs: () => 0 });
    gate.notePlayback(loud());
    expect(gate.gating).toBe(true);
    gate.reset();
    expect(gate.gating).toBe(false);
  });

  it('rejects a negative tail', () => {
    expect(() => new EchoGate({ tailMs: -1 })).toThrow(RangeError);
  });

  it('isAudible compares RMS with the threshold', () => {
    expect(isAudible(new Int16Array(960).fill(99), 100)).toBe(false);
    expect(isAudible(new Int16Array(960).fill(101), 100)).toBe(true);
  });
});

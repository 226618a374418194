// The listening state machine with an injected clock (timers advanced by hand): every way in and out of each
// state, the follow-up window, and that the service can never open the microphone by itself.
import { beforeEach, describe, expect, it } from 'vitest';
import { ListeningStateMachine, THINKING_MS, type ListeningChange, type ListeningClock, type ListeningOptions } from '../../src/agent/listening.js';

/** A clock whose time moves only when the test says (injected, not a fake of a real part). */
class ManualClock implements ListeningClock {
  t = 0;
  private timers = new Map<number, { at: number; fn: () => void }>();
  private id = 0;
  now = () => this.t;
  setTimer = (fn: () => void, ms: number) => {
    this.timers.set(++this.id, { at: this.t + ms, fn });
    return this.id;
  };
  clearTimer = (h: unknown) => void this.timers.delete(h as number);
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const due = [...this.timers.entries()].filter(([, v]) => v.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.t = due[1].at;
      this.timers.delete(due[0]);
      due[1].fn();
    }
    this.t = end;
  }
  get pending(): number {
    return this.timers.size;
  }
}

let clock: ManualClock;
let changes: ListeningChange[];
let opened: string[];
let closed: string[];

function machine(o: Partial<ListeningOptions> = {}): ListeningStateMachine {
  const m = new ListeningStateMachine({ mode: 'wake', silenceMs: 8_000, followUpMs: 5_000, speakingTailMs: 400, clock, ...o });
  m.on('change', (c) => changes.push(c));
  m.on('opened', (r) => opened.push(r));
  m.on('closed', (r) => closed.push(r));
  return m;
}

/** The assistant answers: response, audible frames for `ms`, response.done, then silence past the tail. */
function answer(m: ListeningStateMachine, ms = 600): void {
  m.service('response.created');
  for (let t = 0; t < ms; t += 20) {
    m.playback(true);
    clock.advance(20);
  }
  m.service('response.done');
  for (let t = 0; t < 2_000 && m.state === 'speaking'; t += 20) {
    clock.advance(20);
    m.playback(false);
  }
}

beforeEach(() => {
  clock = new ManualClock();
  changes = [];
  opened = [];
  closed = [];
});

describe('ListeningStateMachine', () => {
  it('starts offline; a call makes it idle with the microphone off the wire', () => {
    const m = machine();
    expect(m.state).toBe('offline');
    m.setCallUp(true);
    expect(m.state).toBe('idle');
    expect(m.micOnWire).toBe(false);
  });

  it('wake -> listening (mic on) -> speech -> thinking -> speaking -> answered -> follow-up -> idle after the window', () => {
    const m = machine();
    m.setCallUp(true);
    expect(m.wake()).toBe(true);
    expect(m.state).toBe('listening');
    expect(m.micOnWire).toBe(true);
    expect(opened).toEqual(['wake']);
    m.service('input_audio_buffer.speech_started');
    m.service('input_audio_buffer.speech_stopped');
    expect(m.state).toBe('thinking');
    m.service('response.created');
    m.playback(true);
    expect(m.state).toBe('speaking');
    answer(m);
    expect(m.state).toBe('listening');
    expect(changes.at(-1)?.reason).toBe('follow_up');
    expect(m.micOnWire).toBe(true);
    clock.advance(4_999);
    expect(m.state).toBe('listening');
    clock.advance(1);
    expect(m.state).toBe('idle');
    expect(m.micOnWire).toBe(false);
    expect(changes.at(-1)?.reason).toBe('follow_up_expired');
    expect(closed).toEqual(['follow_up_expired']);
  });

  it('speech inside the follow-up window keeps the conversation open (no wake word needed)', () => {
    const m = machine();
    m.setCallUp(true);
    m.wake();
    answer(m);
    clock.advance(3_000);
    m.service('input_audio_buffer.speech_started');
    clock.advance(3_000); // past the follow-up window: the silence timer (8 s) now applies
    expect(m.state).toBe('listening');
    expect(m.micOnWire).toBe(true);
    m.service('input_audio_buffer.speech_stopped');
    expect(m.state).toBe('thinking');
  });

  it('followUpMs 0: the answer closes listening', () => {
    const m = machine({ followUpMs: 0 });
    m.setCallUp(true);
    m.wake();
    answer(m);
    expect(m.state).toBe('idle');
    expect(closed).toEqual(['answered']);
  });

  it('listening with nothing said closes after silenceMs', () => {
    const m = machine();
    m.setCallUp(true);
    m.wake();
    clock.advance(7_999);
    expect(m.state).toBe('listening');
    clock.advance(1);
    expect(m.state).toBe('idle');
    expect(changes.at(-1)?.reason).toBe('silence');
  });

  // Until session 12 the silence timer (8 s) also ran while thinking: a 12 s answer came after listening had
  // closed, and its follow-up never opened.
  it('a slow answer is waited for (thinking is not silence); a service that never answers falls back to idle after THINKING_MS', () => {
    const m = machine();
    m.setCallUp(true);
    m.wake();
    m.service('input_audio_buffer.speech_stopped');
    clock.advance(12_000);
    expect(m.state).toBe('thinking');
    m.service('response.created');
    m.playback(true); // the answer, 12 s later
    expect(m.state).toBe('speaking');
    const n = machine();
    n.setCallUp(true);
    n.wake();
    n.service('input_audio_buffer.speech_stopped');
    clock.advance(THINKING_MS - 1);
    expect(n.state).toBe('thinking');
    clock.advance(1);
    expect(n.state).toBe('idle');
  });

  it('the service cannot open the microphone: speech events while idle are ignored, its audio is speaking with the mic off', () => {
    const m = machine();
    m.setCallUp(true);
    m.service('input_audio_buffer.speech_started');
    expect(m.state).toBe('idle');
    m.playback(true);
    expect(m.state).toBe('speaking');
    expect(m.micOnWire).toBe(false);
    for (let t = 0; t < 500; t += 20) {
      m.playback(false);
      clock.advance(20);
    }
    // an announcement with no response events ends with its sound; no follow-up (the user opened nothing)
    expect(m.state).toBe('idle');
    expect(m.micOnWire).toBe(false);
    expect(opened).toEqual([]);
  });

  it('the answer is not over while its audio still plays after response.done, nor between a device function call and its response', () => {
    const m = machine();
    m.setCallUp(true);
    m.wake();
    m.service('response.created');
    m.service('function_call');
    m.service('response.done'); // the device answers with function_call_output + response.create
    m.playback(false);
    clock.advance(1_000);
    m.playback(false);
    expect(m.state).toBe('thinking');
    m.service('response.created');
    m.playback(true);
    m.service('response.done');
    clock.advance(100);
    m.playback(false); // 100 ms < the 400 ms tail
    expect(m.state).toBe('speaking');
    clock.advance(300);
    m.playback(false);
    expect(m.state).toBe('listening');
  });

  it('response.done before its audio arrived (the data channel outruns the audio) waits for the audio; with none, the grace', () => {
    const m = machine();
    m.setCallUp(true);
    m.wake();
    m.service('response.created');
    m.service('response.done');
    for (let t = 0; t < 300; t += 20) {
      clock.advance(20);
      m.playback(false); // the jitter buffer still filling
    }
    expect(m.state).toBe('thinking');
    m.playback(true);
    expect(m.state).toBe('speaking');
    clock.advance(400);
    m.playback(false);
    expect(m.state).toBe('listening');
    expect(changes.at(-1)?.reason).toBe('follow_up');

    m.service('response.created'); // a text-only answer: no audio ever
    m.service('response.done');
    clock.advance(1_400);
    m.playback(false);
    expect(m.state).toBe('thinking');
    clock.advance(100);
    m.playback(false);
    expect(m.state).toBe('listening');
  });

  it('output_audio_buffer.started/stopped drive speaking where a service sends them', () => {
    const m = machine();
    m.setCallUp(true);
    m.wake();
    m.service('output_audio_buffer.started');
    expect(m.state).toBe('speaking');
    clock.advance(500);
    m.service('output_audio_buffer.stopped');
    expect(m.state).toBe('listening'); // follow-up
  });

  it('mode manual ignores the wake word; listen() opens', () => {
    const m = machine({ mode: 'manual' });
    m.setCallUp(true);
    expect(m.wake()).toBe(false);
    expect(m.state).toBe('idle');
    expect(m.listen()).toBe(true);
    expect(m.state).toBe('listening');
    expect(opened).toEqual(['manual']);
  });

  it('mode always: listening whenever the call is up and not muted, never idle, no timers, no earcons', () => {
    const m = machine({ mode: 'always' });
    m.setCallUp(true);
    expect(m.state).toBe('listening');
    expect(m.micOnWire).toBe(true);
    clock.advance(60_000);
    expect(m.state).toBe('listening');
    answer(m);
    expect(m.state).toBe('listening');
    m.setMuted(true);
    expect(m.micOnWire).toBe(false);
    m.setMuted(false);
    expect(m.state).toBe('listening');
    expect(opened).toEqual([]);
    expect(closed).toEqual([]);
    expect(clock.pending).toBe(0);
  });

  it('muted overrides everything: no wake, no listen, mic off; unmuting returns to idle', () => {
    const m = machine();
    m.setCallUp(true);
    m.wake();
    m.setMuted(true);
    expect(m.state).toBe('muted');
    expect(m.micOnWire).toBe(false);
    expect(m.wake()).toBe(false);
    expect(m.listen()).toBe(false);
    m.playback(true);
    m.service('response.created');
    expect(m.state).toBe('muted');
    m.setMuted(false);
    expect(m.state).toBe('idle');
    expect(m.micOnWire).toBe(false);
  });

  it('muted with no call stays muted; unmuting without a call is offline', () => {
    const m = machine();
    m.setMuted(true);
    expect(m.state).toBe('muted');
    m.setCallUp(true);
    expect(m.state).toBe('muted');
    m.setCallUp(false);
    m.setMuted(false);
    expect(m.state).toBe('offline');
  });

  it('losing the call closes listening (offline); a wake word while offline opens nothing', () => {
    const m = machine();
    m.setCallUp(true);
    m.wake();
    m.setCallUp(false);
    expect(m.state).toBe('offline');
    expect(m.micOnWire).toBe(false);
    expect(m.wake()).toBe(false);
    m.setCallUp(true);
    expect(m.state).toBe('idle');
    expect(m.micOnWire).toBe(false);
  });

  it('stop closes listening and a speaking answer; a second wake while listening restarts the window', () => {
    const m = machine();
    m.setCallUp(true);
    m.wake();
    clock.advance(7_000);
    expect(m.wake()).toBe(false); // already listening
    clock.advance(7_000);
    expect(m.state).toBe('listening');
    m.playback(true);
    m.stop();
    expect(m.state).toBe('idle');
    expect(m.micOnWire).toBe(false);
    expect(closed).toEqual(['stop']);
  });

  it('every change carries the previous state, the mic and a reason', () => {
    const m = machine();
    m.setCallUp(true);
    m.wake();
    expect(changes.map((c) => [c.previous, c.state, c.micOnWire, c.reason])).toEqual([
      ['offline', 'idle', false, 'call_up'],
      ['idle', 'listening', true, 'wake'],
    ]);
  });

  it('rejects bad options', () => {
    expect(() => machine({ silenceMs: 0 })).toThrow(/silenceMs/);
    expect(() => machine({ followUpMs: -1 })).toThrow(/followUpMs/);
  });
});

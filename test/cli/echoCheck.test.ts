// doctor's echo check (src/cli/echoCheck.ts) on the virtual sound card with the echo room (test/support/echoRoom.ts:
// 87 ms, -6 dB, a room impulse response) between its speaker and its microphone: the probe's echo is found and
// cancelled past the check's "good" level. The plain card (no echo path: a warning) is doctor's own test
// (serverCommands.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PortAudioBackend } from '../../src/agent/audio/portAudioBackend.js';
import { checkEcho } from '../../src/cli/echoCheck.js';
import { EchoRoom } from '../support/echoRoom.js';

describe.skipIf(!process.env.PULSE_SERVER)('doctor echo check in the echo room (87 ms, -6 dB)', () => {
  let room: EchoRoom;
  beforeAll(async () => {
    room = new EchoRoom({ delayMs: 87, attenuationDb: 6, noiseDbfs: -70 });
    await room.start();
  }, 60_000);
  afterAll(async () => {
    await room?.stop();
  });

  it('finds the echo where the room puts it and reports it reduced by at least 10 dB: a pass', async () => {
    const backend = new PortAudioBackend();
    const near = await checkEcho(backend, 'default', 'default', undefined);
    expect(near.status, near.detail).toBe('pass');
    expect(near.reductionDb).toBeGreaterThanOrEqual(10);
    expect(near.detail).toMatch(/^echo heard [\d.]+ ms after playback, reduced by [\d.]+ dB/);
    // the delay reported is the room's plus the card's own latency: moved by the room, it moves as much
    await room.setDelay(150);
    const far = await checkEcho(backend, 'default', 'default', undefined);
    await room.setDelay(87);
    expect(far.status, far.detail).toBe('pass');
    expect(far.delayMs! - near.delayMs!).toBeGreaterThanOrEqual(63 - 10);
    expect(far.delayMs! - near.delayMs!).toBeLessThanOrEqual(63 + 10);
  }, 60_000);
});

// Earcons: generated sounds, WAV replacements (any rate, mono or stereo), "off", clear errors, and the mixing
// into the downlink's frames.
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EARCON_NAMES, EarconPlayer, generateEarcon, loadEarcons } from '../../../src/agent/audio/earcons.js';
import { dominantFrequency, sineWave } from '../../../src/common/audio/signal.js';
import { encodeWav } from '../../../src/common/audio/wav.js';

const defaults = Object.fromEntries(EARCON_NAMES.map((n) => [n, 'default'])) as Record<(typeof EARCON_NAMES)[number], string>;

describe('earcons', () => {
  it('each generated earcon is short, audible, clipped nowhere and starts and ends at zero (no click)', () => {
    for (const name of EARCON_NAMES) {
      const s = generateEarcon(name);
      expect(s.length / 48).toBeGreaterThan(100);
      expect(s.length / 48).toBeLessThan(700);
      const peak = Math.max(...s.map(Math.abs));
      expect(peak).toBeGreaterThan(5000);
      expect(peak).toBeLessThan(8000);
      expect(Math.abs(s[0])).toBeLessThan(50);
      expect(Math.abs(s[s.length - 1])).toBeLessThan(50);
    }
    // opened rises, closed falls
    const opened = generateEarcon('opened');
    const half = opened.length >> 1;
    expect(dominantFrequency(opened.subarray(0, 2400), 48_000)).toBeLessThan(dominantFrequency(opened.subarray(half), 48_000));
  });

  it('"off" plays nothing; a WAV path replaces the sound (resampled to 48 kHz, stereo mixed down)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'earcon-'));
    const mono16k = sineWave(500, 16_000, 0.2, 0.3);
    const stereo = new Int16Array(mono16k.length * 2);
    mono16k.forEach((v, i) => ((stereo[2 * i] = v), (stereo[2 * i + 1] = v)));
    const wav = path.join(dir, 'ding.wav');
    await writeFile(wav, encodeWav(stereo, 16_000, 2));
    const sounds = loadEarcons({ ...defaults, opened: wav, closed: 'off' });
    expect(sounds.closed).toBeUndefined();
    expect(sounds.opened!.length).toBeCloseTo(48_000 * 0.2, -2);
    expect(Math.abs(dominantFrequency(sounds.opened!, 48_000) - 500)).toBeLessThan(15);
    const player = new EarconPlayer(sounds);
    expect(player.play('closed')).toBe(false);
    expect(player.play('opened')).toBe(true);
  });

  it('a missing or broken WAV is a config_invalid error naming the setting', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'earcon-'));
    expect(() => loadEarcons({ ...defaults, muted: path.join(dir, 'nope.wav') })).toThrow(/earcons\.muted: cannot read the WAV/);
    const junk = path.join(dir, 'junk.wav');
    await writeFile(junk, 'not a wav at all');
    try {
      loadEarcons({ ...defaults, unreachable: junk });
      expect.unreachable();
    } catch (err) {
      expect((err as { code: string }).code).toBe('config_invalid');
    }
  });

  it('mixes into frames until the sound ends, without touching the frame it was given, clipping at full scale', () => {
    const sound = new Int16Array(960 * 2 + 100).fill(20_000);
    const player = new EarconPlayer({ opened: sound });
    const frame = new Int16Array(960).fill(20_000);
    expect(player.mix(frame)).toBe(frame); // nothing playing: the same frame
    player.play('opened');
    const out1 = player.mix(frame);
    expect(out1).not.toBe(frame);
    expect(frame[0]).toBe(20_000);
    expect(out1[0]).toBe(32_767);
    player.mix(frame);
    const out3 = player.mix(frame);
    expect([out3[99], out3[100]]).toEqual([32_767, 20_000]);
    expect(player.playing).toBe(false);
    expect(player.mix(frame)).toBe(frame);
    expect(player.timing.firstWrittenNs).toBeGreaterThanOrEqual(player.timing.requestedNs);
  });
});

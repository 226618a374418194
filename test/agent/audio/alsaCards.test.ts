// The kernel's card list read from /proc/asound (alsaCards.ts), on a Raspberry Pi's files (test/fixtures/asound).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { alsaCardDevices } from '../../../src/agent/audio/alsaCards.js';

const pi4 = path.join(import.meta.dirname, '../../fixtures/asound/pi4-usb-mic');

describe('alsaCardDevices', () => {
  it("names each card's PCM device as PortAudio does, opened by the card's id with ALSA's conversions", () => {
    expect(alsaCardDevices(pi4)).toEqual([
      { name: 'bcm2835 Headphones: bcm2835 Headphones (hw:0,0)', alsaName: 'plughw:CARD=Headphones,DEV=0', capture: false, playback: true },
      { name: 'vc4-hdmi-0: MAI PCM i2s-hifi-0 (hw:1,0)', alsaName: 'plughw:CARD=vc4hdmi0,DEV=0', capture: false, playback: true },
      { name: 'USB PnP Sound Device: USB Audio (hw:2,0)', alsaName: 'plughw:CARD=Device,DEV=0', capture: true, playback: true },
    ]);
  });

  it('no /proc/asound (no ALSA in the kernel, or hidden): undefined, not an empty list; a card without a PCM yet: none of its devices', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'asound-'));
    expect(alsaCardDevices(path.join(dir, 'absent'))).toBeUndefined();
    writeFileSync(path.join(dir, 'cards'), ' 0 [Loopback       ]: Loopback - Loopback\n                      Loopback 1\n');
    expect(alsaCardDevices(dir)).toEqual([]);
    writeFileSync(path.join(dir, 'cards'), '--- no soundcards ---\n');
    writeFileSync(path.join(dir, 'pcm'), '00-00: x : y : capture 1\nnot a line\n');
    expect(alsaCardDevices(dir)).toEqual([]); // a PCM of a card not listed is not made up
  });
});

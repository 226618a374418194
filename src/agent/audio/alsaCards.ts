// The sound cards the kernel has now, read from /proc/asound, named as PortAudio names them.
//
// Why: PortAudio makes its device list at its first Pa_Initialize and keeps it while any stream is open (a later
// Pa_Initialize only counts up; V19 cannot rescan), and a speaker keeps its playback open. A USB microphone
// plugged in after the agent started, or one that came back under another card number, was not in that list and
// stayed unheard until a restart. Two small files give the kernel's own list at any time, with no ALSA call and no
// lock: the backend resolves a device against it while a stream is open and opens what it finds by its ALSA name
// (portAudioBackend.ts; the vendored naudiodon2's deviceString, PATCHES.md item 18).
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface AlsaCardDevice {
  /** "<card name>: <pcm name> (hw:C,D)", as PortAudio's ALSA host API names a card's device */
  name: string;
  /** what ALSA opens: the card by its id, which stays its own across re-plugging, with ALSA's conversions (plug) */
  alsaName: string;
  capture: boolean;
  playback: boolean;
}

/**
 * The cards' PCM devices, or undefined when /proc/asound cannot be read (no ALSA in the kernel, a sandbox that
 * hides it): the caller then has nothing fresher than PortAudio's list.
 *
 * /proc/asound/cards: " 1 [Device         ]: USB-Audio - USB PnP Sound Device" (number, id, driver, the card's
 * name, which is what snd_ctl_card_info_get_name gives PortAudio), then a line of the long name.
 * /proc/asound/pcm: "01-00: USB Audio : USB Audio : playback 1 : capture 1" (card-device, id, name, streams).
 */
export function alsaCardDevices(root = '/proc/asound'): AlsaCardDevice[] | undefined {
  let cardsText: string;
  let pcmText: string;
  try {
    cardsText = readFileSync(path.join(root, 'cards'), 'utf8');
  } catch {
    return undefined;
  }
  try {
    pcmText = readFileSync(path.join(root, 'pcm'), 'utf8');
  } catch {
    pcmText = ''; // cards without a PCM device (the kernel prints no file until one has one)
  }
  const cards = new Map<number, { id: string; name: string }>();
  for (const line of cardsText.split('\n')) {
    const m = /^\s*(\d+) \[([^\]\s]+)\s*\]: \S+ - (.*)$/.exec(line);
    if (m) cards.set(Number(m[1]), { id: m[2], name: m[3].trim() });
  }
  const devices: AlsaCardDevice[] = [];
  for (const line of pcmText.split('\n')) {
    const m = /^(\d+)-(\d+): (.*)$/.exec(line);
    if (!m) continue;
    const card = cards.get(Number(m[1]));
    if (!card) continue;
    const dev = Number(m[2]);
    const fields = m[3].split(' : ');
    if (fields.length < 3) continue;
    const streams = fields.slice(2);
    devices.push({
      name: `${card.name}: ${fields[1]} (hw:${Number(m[1])},${dev})`,
      alsaName: `plughw:CARD=${card.id},DEV=${dev}`,
      capture: streams.some((s) => /^capture \d+/.test(s)),
      playback: streams.some((s) => /^playback \d+/.test(s)),
    });
  }
  return devices;
}

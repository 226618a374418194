// Helpers on the virtual sound card started by globalSetup: sink/source names and pactl access.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const VIRTUAL = {
  /** The sink the agent plays to; record "speaker.monitor" to hear what it played. */
  speakerSink: 'speaker',
  speakerMonitor: 'speaker.monitor',
  /** Play into this sink to speak into the microphone source "mic". */
  micSink: 'mic_in',
  micSource: 'mic',
  /** amixer's simple control on the pulse ALSA card. */
  mixerControl: 'Master',
} as const;

export async function pactl(...args: string[]): Promise<string> {
  const { stdout } = await run('pactl', args, { env: process.env });
  return stdout;
}

export function pulseAvailable(): boolean {
  return Boolean(process.env.PULSE_SERVER);
}

// `speaker-agent devices`: the capture and playback devices PortAudio sees, and which ones the config picks.
import type { Command } from 'commander';
import { resolveDevice } from '../../agent/audio/portAudioBackend.js';
import { settings } from '../cliContext.js';
import { audioBackend } from '../../agent/device.js';
import { emit, table } from '../output.js';

export function registerDevices(program: Command): void {
  program
    .command('devices')
    .description('list capture and playback devices (and the ones the configuration selects)')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExamples:\n  speaker-agent devices\n  speaker-agent devices --json | jq \'.devices[] | select(.maxInputChannels > 0)\'')
    .action(async (o: { json?: boolean }) => {
      const { settings: s } = settings();
      const devices = (await audioBackend()).listDevices();
      const pick = (name: string, dir: 'input' | 'output') => {
        try {
          return resolveDevice(devices, name, dir);
        } catch (err) {
          return { id: null, label: null, error: (err as Error).message };
        }
      };
      const result = {
        devices,
        configured: {
          capture: { name: s.audio.captureDevice, resolved: pick(s.audio.captureDevice, 'input') },
          playback: { name: s.audio.playbackDevice, resolved: pick(s.audio.playbackDevice, 'output') },
        },
      };
      emit(o, result, (r) => {
        const rows = r.devices.map((d) => [
          String(d.id),
          d.name,
          d.maxInputChannels > 0 ? `capture(${d.maxInputChannels})` : '',
          d.maxOutputChannels > 0 ? `playback(${d.maxOutputChannels})` : '',
          String(d.defaultSampleRate),
          d.hostApi,
        ]);
        const sel = (c: { name: string; resolved: { label: string | null; error?: string } }) =>
          c.resolved.error ? `${c.name} -> NOT FOUND` : `${c.name} -> ${c.resolved.label}`;
        return (
          table(['id', 'name', 'capture', 'playback', 'rate', 'host api'], rows) +
          `\n\nconfigured capture:  ${sel(r.configured.capture)}\nconfigured playback: ${sel(r.configured.playback)}`
        );
      });
    });
}

// `speaker-agent listen [open|stop]`: opens listening now without the wake word (push-to-talk for a button
// script; the only way in with listening.mode manual), or closes it and cuts the answer. Through the running
// daemon's status socket (POST /listen, POST /stop); config.json is not needed.
import type { Command } from 'commander';
import { AgentError, EXIT_CODES } from '../../agent/errors.js';
import type { AgentStatus, ListeningStatus } from '../../agent/agent.js';
import { emit } from '../output.js';
import { locateDaemon, readStatusFrom, sendCommand } from '../statusClient.js';

export function registerListen(program: Command): void {
  program
    .command('listen')
    .description('open listening now, without the wake word (or `listen stop`: close it and cut the answer)')
    .argument('[action]', 'open | stop', 'open')
    .option('--json', 'print the answer as JSON')
    .option('--socket <path>', 'status socket of the daemon (default: found automatically)')
    .addHelpText('after', '\nExamples:\n  speaker-agent listen            # a button\'s push-to-talk\n  speaker-agent listen stop\n\n' +
      'listen exits 6 (audio) when listening opened but the microphone is not open (no sound card): nothing is heard.')
    .action(async (action: string, o: { json?: boolean; socket?: string }) => {
      if (action !== 'open' && action !== 'stop') throw new AgentError('usage', `unknown listen action "${action}": use open or stop`);
      const place = locateDaemon(o.socket);
      const { socketPath, answer } = await sendCommand(place.candidates, action === 'open' ? '/listen' : '/stop', undefined, place.configDenied);
      const a = answer as { ok: boolean; listening: ListeningStatus; microphone?: string };
      const opened = action === 'open' && (a.ok || a.listening.state === 'listening');
      // Listening opened without a microphone (no sound card, or one the agent is still retrying) hears nothing:
      // "listening", exit 0 was all a button script got. The daemon's status tells; a status that cannot be
      // read leaves the answer as it was.
      const microphone = opened ? await readStatusFrom(socketPath, 2000).then((s) => (s as Partial<AgentStatus>).audioDevices?.microphone, () => undefined) : undefined;
      const deaf = microphone !== undefined && microphone !== 'open';
      if (deaf) a.microphone = microphone;
      emit(o, a, (r) => {
        if (action === 'stop') return `listening closed (${r.listening.state})`;
        if (opened) return 'listening';
        if (r.listening.micMuted) return 'not listening: the microphone is muted (speaker-agent mic on)';
        return `not listening: ${r.listening.state === 'offline' ? 'no call with the service (it is unreachable)' : r.listening.state}`;
      });
      if (deaf) {
        process.stderr.write(`speaker-agent: listening, but the microphone is not open (${microphone}): nothing is heard. Is the sound card there? (speaker-agent status)\n`);
        process.exitCode = EXIT_CODES.audio;
      }
      if (action === 'open' && !opened) process.exitCode = a.listening.state === 'offline' ? 5 : 1;
    });
}

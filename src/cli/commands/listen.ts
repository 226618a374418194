// `speaker-agent listen [open|stop]`: opens listening now without the wake word (push-to-talk for a button
// script; the only way in with listening.mode manual), or closes it and cuts the answer. Through the running
// daemon's status socket (POST /listen, POST /stop).
import type { Command } from 'commander';
import { AgentError } from '../../agent/errors.js';
import type { ListeningStatus } from '../../agent/agent.js';
import { statusSocketCandidates } from '../../agent/statusServer.js';
import { settings } from '../cliContext.js';
import { emit } from '../output.js';
import { sendCommand } from '../statusClient.js';

export function registerListen(program: Command): void {
  program
    .command('listen')
    .description('open listening now, without the wake word (or `listen stop`: close it and cut the answer)')
    .argument('[action]', 'open | stop', 'open')
    .option('--json', 'print the answer as JSON')
    .option('--socket <path>', 'status socket of the daemon (default: found automatically)')
    .addHelpText('after', '\nExamples:\n  speaker-agent listen            # a button\'s push-to-talk\n  speaker-agent listen stop')
    .action(async (action: string, o: { json?: boolean; socket?: string }) => {
      if (action !== 'open' && action !== 'stop') throw new AgentError('usage', `unknown listen action "${action}": use open or stop`);
      const candidates = o.socket ? [o.socket] : statusSocketCandidates(settings().stateDir);
      const { answer } = await sendCommand(candidates, action === 'open' ? '/listen' : '/stop');
      const a = answer as { ok: boolean; listening: ListeningStatus };
      emit(o, a, (r) => {
        if (action === 'stop') return `listening closed (${r.listening.state})`;
        if (r.ok || r.listening.state === 'listening') return 'listening';
        if (r.listening.micMuted) return 'not listening: the microphone is muted (speaker-agent mic on)';
        return `not listening: ${r.listening.state === 'offline' ? 'no call with the service (it is unreachable)' : r.listening.state}`;
      });
      if (action === 'open' && !a.ok && a.listening.state !== 'listening') process.exitCode = a.listening.state === 'offline' ? 5 : 1;
    });
}

// `speaker-agent mic [off|on]`: the privacy mute. Through the running daemon (POST /mic/off, /mic/on): the
// capture device is closed, nothing is sent, and the mute is kept across restarts (<state dir>/mic.json).
// With no daemon running, the file is written directly, so the agent starts muted (or not) next time.
// config.json is not loaded: a typo in it must not make the mute impossible on a running speaker (privacy first).
import type { Command } from 'commander';
import { AgentError } from '../../agent/errors.js';
import type { ListeningStatus } from '../../agent/agent.js';
import { micStatePath, readMicMuted, writeMicMuted } from '../../agent/micMute.js';
import { emit } from '../output.js';
import { writeFailureReason } from '../writeFailure.js';
import { DaemonUnreachable, locateDaemon, PERMISSION_DENIED, readStatus, sendCommand } from '../statusClient.js';

const denied = (err: unknown) => ['EACCES', 'EPERM'].includes((err as NodeJS.ErrnoException).code ?? '');

export function registerMic(program: Command): void {
  program
    .command('mic')
    .description('privacy mute: `mic off` closes the microphone (kept across restarts), `mic on` opens it; no action shows it')
    .argument('[action]', 'off | on')
    .option('--json', 'print JSON {micMuted, running}')
    .option('--socket <path>', 'status socket of the daemon (default: found automatically)')
    .addHelpText('after', '\nExamples:\n  speaker-agent mic off\n  speaker-agent mic on\n  speaker-agent mic --json')
    .action(async (action: string | undefined, o: { json?: boolean; socket?: string }) => {
      if (action !== undefined && action !== 'off' && action !== 'on') throw new AgentError('usage', `unknown mic action "${action}": use off or on`);
      const place = locateDaemon(o.socket);
      const file = micStatePath(place.stateDir);
      let result: { micMuted: boolean; running: boolean; state?: string; kept?: boolean; problem?: string };
      try {
        if (action === undefined) {
          const { status } = await readStatus(place.candidates, undefined, place.configDenied);
          const l = (status as { listening?: ListeningStatus }).listening;
          result = { micMuted: l?.micMuted ?? readMicMuted(file).muted, running: true, state: l?.state };
        } else {
          const { answer } = await sendCommand(place.candidates, action === 'off' ? '/mic/off' : '/mic/on', undefined, place.configDenied);
          const a = answer as { listening: ListeningStatus; kept?: boolean; problem?: string };
          result = { micMuted: a.listening.micMuted, running: true, state: a.listening.state };
          if (a.kept === false) Object.assign(result, { kept: false, problem: a.problem });
        }
      } catch (err) {
        // Only a daemon that is surely not there (every socket missing or refused) is replaced by the file. A
        // permission denied or a daemon that did not answer in time was taken for none: "MUTED (the agent is not
        // running)" was printed, mic.json written (into the caller's home, without sudo) and the daemon listened on.
        if (!(err instanceof DaemonUnreachable) || !err.absent || o.socket) {
          if (action === undefined || !(err instanceof DaemonUnreachable)) throw err;
          const timedOut = err.tried.some((t) => t.code === 'ETIMEDOUT');
          throw new AgentError(err.code, `${err.message}\n${timedOut ? `\`mic ${action}\` is not confirmed: the agent may apply it when it recovers; check with \`speaker-agent mic\`.` : 'the microphone was not changed.'}`);
        }
        // A config.json that does not parse hides its paths.stateDir: the file could go where the agent never reads
        // it (and the agent cannot start with that config anyway), so nothing is written and the user is told.
        if (action !== undefined && place.configDenied && !o.socket) {
          throw new AgentError('config_invalid', `${PERMISSION_DENIED}\n  ${place.configDenied}: permission denied\nthe microphone was not changed.`);
        }
        if (action !== undefined && place.configBroken && !o.socket) {
          throw new AgentError(
            'config_invalid',
            `the agent is not running, and ${place.configBroken} cannot be read, so where it keeps its state is unknown: the microphone was not changed. Fix config.json (the agent cannot start with it either), then run \`speaker-agent mic ${action}\` again.`,
          );
        }
        const read = action === undefined ? readMicMuted(file) : undefined;
        try {
          if (action !== undefined) await writeMicMuted(file, action === 'off');
        } catch (e) {
          if (denied(e)) throw new AgentError('config_invalid', `${PERMISSION_DENIED}\n  ${(e as Error).message}\nthe microphone was not changed.`, { cause: e });
          // A full or failing card: node's bare "ENOSPC: no space left on device, open" named neither the file
          // nor that nothing was changed.
          const reason = writeFailureReason(e);
          if (reason) throw new AgentError('config_invalid', `cannot write ${file}: ${reason}.\nthe microphone was not changed (the agent is not running).`, { cause: e });
          throw e;
        }
        if (read?.problem && /EACCES|EPERM/.test(read.problem)) throw new AgentError('config_invalid', `${PERMISSION_DENIED}\n  ${read.problem}`);
        result = { micMuted: read ? read.muted : action === 'off', running: false };
        // An agent starting meanwhile may have read the file before this write landed (an SD card's fsync and
        // rename take a while): asked once more, and through it if it answers now (the command is idempotent). Its
        // socket listens before it reads the file again, so one or the other sees the mute.
        if (action !== undefined) {
          try {
            const { answer } = await sendCommand(place.candidates, action === 'off' ? '/mic/off' : '/mic/on');
            const a = answer as { listening: ListeningStatus; kept?: boolean; problem?: string };
            result = { micMuted: a.listening.micMuted, running: true, state: a.listening.state };
          } catch {
            /* still no agent: the file is the answer */
          }
        }
      }
      emit(o, result, (r) =>
        `microphone ${r.micMuted ? 'MUTED (not read, nothing sent)' : 'on'}${r.running ? '' : ' (the agent is not running; it starts so)'}` +
          (r.kept === false ? `\nnot kept across a restart: ${r.problem ?? 'the state file could not be written'}` : ''),
      );
    });
}

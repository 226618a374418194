// `speaker-agent status`: the running daemon's state, read from its status socket.
import type { Command } from 'commander';
import { AgentError } from '../../agent/errors.js';
import { statusSocketCandidates } from '../../agent/statusServer.js';
import type { DaemonStatus } from '../daemonStatus.js';
import { settings } from '../cliContext.js';
import { emit, formatDuration } from '../output.js';
import { followEvents, readStatus } from '../statusClient.js';
import { printLine } from '../output.js';

function human(s: DaemonStatus, socketPath: string): string {
  const since = (iso: string | null) => (iso ? `${formatDuration(Date.now() - Date.parse(iso))} ago` : '-');
  const lines = [
    `call:        ${s.state}${s.state === 'connected' ? ` (call ${s.callId}, up ${since(s.connectedSince).replace(' ago', '')})` : ''}`,
    `server:      ${s.server}${s.companion ? ' (local companion server)' : ''}`,
    `client id:   ${s.clientId}`,
    `secret:      ${s.secretFingerprint}`,
    `volume:      ${s.volume ? `${s.volume.volumePercent}%${s.volume.muted ? ' (muted)' : ''}` : 'unknown'}`,
    `uptime:      ${formatDuration(s.uptimeMs)}   pid ${s.pid}   rss ${(s.rssBytes / 1048576).toFixed(0)} MB   v${s.version}`,
    `reconnects:  ${s.reconnects}`,
  ];
  const e = s.echoCanceller;
  // a daemon from before the echo canceller sends no such field
  if (e) lines.push(`echo:        canceller ${e.state}, delay ${e.delayMs ?? '-'} ms, echo reduced ${e.erleDb ?? '-'} dB`);
  if (s.listening) {
    const l = s.listening;
    lines.push(`listening:   ${l.state}${l.micMuted ? ' (microphone MUTED: not read, nothing sent)' : ''}   mode ${l.mode}` +
      (l.mode === 'wake' ? `, wake word "${l.wakeWord.phrase}" (${l.wakeWord.kind ? `${l.wakeWord.kind} ` : ''}${l.wakeWord.engine})` : ''));
  }
  if (s.state === 'backoff' && s.nextAttemptAt) lines.push(`next try:    in ${formatDuration(Math.max(0, Date.parse(s.nextAttemptAt) - Date.now()))}`);
  if (s.lastError) lines.push(`last error:  ${s.lastError.code}: ${s.lastError.message} (${since(s.lastError.at)})`);
  lines.push(s.lastTranscripts.length ? 'transcripts:' : 'transcripts: none yet');
  for (const t of s.lastTranscripts.slice(-8)) lines.push(`  ${t.at.slice(11, 19)} ${t.role === 'user' ? 'you      ' : 'assistant'}  ${t.text}`);
  lines.push(`(from ${socketPath})`);
  return lines.join('\n');
}

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description('show the running agent: call state, server, identity, volume, uptime, last transcripts')
    .option('--json', 'print the daemon\'s status as JSON')
    .option('--socket <path>', 'status socket of the daemon (default: found automatically)')
    .option('--follow', 'print one line per listening state change (idle, listening, thinking, speaking, muted, offline) until the agent stops')
    .addHelpText('after', '\nExamples:\n  speaker-agent status\n  sudo speaker-agent status --json | jq .state\n  speaker-agent status --follow --json   # JSON lines, e.g. for an LED (README)')
    .action(async (o: { json?: boolean; socket?: string; follow?: boolean }) => {
      const candidates = o.socket ? [o.socket] : statusSocketCandidates(settings().stateDir);
      if (o.follow) {
        const stop = new AbortController();
        const onSignal = () => stop.abort();
        process.once('SIGINT', onSignal);
        process.once('SIGTERM', onSignal);
        await followEvents(
          candidates,
          (ev) => {
            printLine(o.json ? JSON.stringify(ev) : `${ev.at.slice(11, 23)} ${ev.state.padEnd(9)} ${ev.micOnWire ? 'mic-on-wire' : 'mic-off    '} ${ev.reason}`);
          },
          stop.signal,
        );
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        return;
      }
      const { socketPath, status } = await readStatus(candidates);
      const st = status as Partial<DaemonStatus> | null;
      // `--socket` at some other server's socket: its JSON has none of the fields (human() would throw on them)
      if (typeof st?.state !== 'string' || !Array.isArray(st.lastTranscripts)) {
        throw new AgentError('internal', `${socketPath} is not a speaker-agent status socket: GET /status answered JSON that is not an agent's status`);
      }
      emit(o, status as DaemonStatus, (s) => human(s, socketPath));
    });
}

// `speaker-agent status`: the running daemon's state, read from its status socket.
import type { Command } from 'commander';
import { AgentError } from '../../agent/errors.js';
import type { DaemonStatus } from '../daemonStatus.js';
import { emit, formatDuration } from '../output.js';
import { keepFollowing, locateDaemon, readStatus } from '../statusClient.js';
import { writeOut } from '../stdio.js';

/** One device of audioDevices (resilientDevice.ts's DeviceState) in words: a missing sound card showed nowhere
 *  (connected, idle, wake word ready) while the agent heard nothing. */
function device(name: string, state: string, micMuted: boolean): string {
  if (state === 'open') return `${name} open`;
  if (state === 'retrying') return `${name} NOT OPEN (retrying: no such device?)`;
  if (state === 'closed' && name === 'microphone' && micMuted) return `${name} closed (muted)`;
  return `${name} NOT OPEN (${state})`;
}

/** `status` without --json: the daemon's status in lines (exported for the tests of what it shows). */
export function humanStatus(s: DaemonStatus, socketPath: string): string {
  // durations from the daemon's monotonic clock where it sends them (a daemon from before them sends none): its
  // wall-clock stamps are off by any step NTP made since (a board without a real-time clock)
  const ago = (iso: string | null, ms: number | null | undefined) => (ms != null ? formatDuration(ms) : iso ? formatDuration(Date.now() - Date.parse(iso)) : '-');
  const lines = [
    `call:        ${s.state}${s.state === 'connected' ? ` (call ${s.callId}, up ${ago(s.connectedSince, s.connectedForMs)}${s.route === 'relayed' ? ', through the service\'s TURN relay' : ''})` : ''}`,
    `server:      ${s.server}${s.companion ? ' (local companion server)' : ''}`,
    `client id:   ${s.clientId}`,
    `secret:      ${s.secretFingerprint}`,
    `volume:      ${s.volume ? `${s.volume.volumePercent}%${s.volume.muted ? ' (muted)' : ''}` : 'unknown'}`,
    `uptime:      ${formatDuration(s.uptimeMs)}   pid ${s.pid}   rss ${(s.rssBytes / 1048576).toFixed(0)} MB   v${s.version}`,
    `reconnects:  ${s.reconnects}`,
  ];
  // a daemon from before the field sends none; null: the sound card is not set up yet
  if (s.audioDevices !== undefined) {
    const a = s.audioDevices;
    lines.push(`audio:       ${a ? `${device('microphone', a.microphone, s.listening?.micMuted ?? false)}, ${device('speaker', a.speaker, false)}` : 'not started'}` +
      (s.audio === 'virtual' ? ' (the virtual sound card)' : ''));
  }
  // an xrun is a click or a gap heard (speaker) or audio lost (microphone); a daemon from before the field sends none
  if (s.xruns) lines.push(`xruns:       ${s.xruns.underruns} speaker underruns, ${s.xruns.overruns} microphone overruns since start`);
  const e = s.echoCanceller;
  // a daemon from before the echo canceller sends no such field
  if (e) lines.push(`echo:        canceller ${e.state}, delay ${e.delayMs ?? '-'} ms, echo reduced ${e.erleDb ?? '-'} dB`);
  if (s.listening) {
    const l = s.listening;
    lines.push(`listening:   ${l.state}${l.micMuted ? ' (microphone MUTED: not read, nothing sent)' : ''}   mode ${l.mode}` +
      (l.mode === 'wake' ? `, wake word "${l.wakeWord.phrase}" (${l.wakeWord.kind ? `${l.wakeWord.kind} ` : ''}${l.wakeWord.engine})` : ''));
  }
  if (s.state === 'backoff' && s.nextAttemptAt) lines.push(`next try:    in ${formatDuration(s.nextAttemptInMs ?? Math.max(0, Date.parse(s.nextAttemptAt) - Date.now()))}`);
  if (s.lastError) lines.push(`last error:  ${s.lastError.code}: ${s.lastError.message} (${ago(s.lastError.at, s.lastError.agoMs)} ago)`);
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
    .option('--follow', 'print one line per listening state change (idle, listening, thinking, speaking, muted, offline; not_running while the agent is down, then it waits for it) until interrupted')
    .addHelpText('after', '\nExamples:\n  speaker-agent status\n  sudo speaker-agent status --json | jq .state\n  speaker-agent status --follow --json   # JSON lines, e.g. for an LED (README)')
    .action(async (o: { json?: boolean; socket?: string; follow?: boolean }) => {
      const place = locateDaemon(o.socket);
      if (o.follow) {
        const stop = new AbortController();
        const onSignal = () => stop.abort();
        process.once('SIGINT', onSignal);
        process.once('SIGTERM', onSignal);
        try {
          await keepFollowing(
            place,
            (ev) => {
              const line = o.json ? JSON.stringify(ev) : `${ev.at.slice(11, 23)} ${ev.state.padEnd(9)} ${ev.micOnWire ? 'mic-on-wire' : 'mic-off    '} ${ev.reason}`;
              // the reader (an LED script's loop) is gone: following on for nobody would never end now
              if (!writeOut(`${line}\n`)) stop.abort();
            },
            stop.signal,
            { onProblem: (err) => process.stderr.write(`speaker-agent: ${err.message}\n`) },
          );
        } finally {
          process.off('SIGINT', onSignal);
          process.off('SIGTERM', onSignal);
        }
        return;
      }
      const { socketPath, status } = await readStatus(place.candidates, undefined, place.configDenied);
      const st = status as Partial<DaemonStatus> | null;
      // `--socket` at some other server's socket: its JSON has none of the fields (humanStatus() would throw on them)
      if (typeof st?.state !== 'string' || !Array.isArray(st.lastTranscripts)) {
        throw new AgentError('internal', `${socketPath} is not a speaker-agent status socket: GET /status answered JSON that is not an agent's status`);
      }
      emit(o, status as DaemonStatus, (s) => humanStatus(s, socketPath));
    });
}

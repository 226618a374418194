// A real systemd-journald for tests, where systemd is not PID 1 (CI's containers, this machine): Debian's journald
// (the systemd package, `setup.sh --dev`) started in a private mount namespace with its own /run/systemd and
// /run/log (tmpfs: nothing of the host's journal is read or written), a command run with its stdout on journald's
// stream socket as systemd connects a unit's (systemd-cat, JOURNAL_STREAM set to that socket as systemd sets it),
// and the entries journald stored read back with journalctl. Needs root (a mount namespace).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const JOURNALD = ['/lib/systemd/systemd-journald', '/usr/lib/systemd/systemd-journald'].find((p) => existsSync(p));

/** Whether this machine can run it: journald installed, root, and `unshare` (util-linux). */
export function journaldAvailable(): boolean {
  return JOURNALD !== undefined && process.getuid?.() === 0 && spawnSync('unshare', ['--version']).status === 0;
}

export interface JournalEntry {
  PRIORITY?: string;
  MESSAGE?: string;
  SYSLOG_IDENTIFIER?: string;
  [field: string]: unknown;
}

/** Runs `command` (argv) under a private journald with SYSLOG_IDENTIFIER `identifier`; returns its journal entries,
 *  all of them and those journalctl selects with `select` (e.g. ['-p', 'warning']). */
export async function runUnderJournald(
  identifier: string,
  command: string[],
  env: NodeJS.ProcessEnv = process.env,
  select: string[] = [],
): Promise<{ entries: JournalEntry[]; selected: JournalEntry[]; status: number | null; stderr: string }> {
  const script = `
set -e
mount -t tmpfs tmpfs /run/systemd 2>/dev/null || { mkdir -p /run/systemd && mount -t tmpfs tmpfs /run/systemd; }
mkdir -p /run/log && mount -t tmpfs tmpfs /run/log
# a persistent journal on the host (Storage=auto writes there when it exists) is hidden too
[ -d /var/log/journal ] && mount -t tmpfs tmpfs /var/log/journal
"$JOURNALD" >/dev/null 2>&1 &
journald=$!
for i in $(seq 100); do [ -S /run/systemd/journal/stdout ] && break; sleep 0.05; done
set +e
systemd-cat -t "$IDENT" sh -c 'JOURNAL_STREAM=$(stat -L -c %d:%i /proc/$$/fd/1) exec "$@"' sh "$@"
status=$?
# journald keeps a file per open stream in /run/systemd/journal/streams and removes it once it has read the stream
# to its end (every line before EOF is stored first): wait for that (at most 30 s; CI's load delayed journald
# past the count's stillness below, and "shutting down" was missing from a run's journal)
for i in $(seq 300); do [ -z "$(ls -A /run/systemd/journal/streams 2>/dev/null)" ] && break; sleep 0.1; done
journalctl --sync 2>/dev/null || true
# journald reads the stream's last lines in its own time (a process that ends with _exit leaves them in the socket,
# and CI's load delays journald): read only once the count has stood still for 3 looks 0.3 s apart (at most 10 s)
prev=-1 still=0
for i in $(seq 33); do
  n=$(journalctl -D /run/log/journal -o cat --no-pager -t "$IDENT" 2>/dev/null | wc -l)
  if [ "$n" = "$prev" ]; then still=$((still + 1)); [ $still -ge 3 ] && break; else still=0; fi
  prev=$n
  sleep 0.3
done
journalctl -D /run/log/journal -o json --no-pager -t "$IDENT" >&3
echo '--- selected' >&3
journalctl -D /run/log/journal -o json --no-pager -t "$IDENT" $SELECT >&3
kill $journald
exit $status`;
  // not spawnSync: the command may talk to a server in this process (a test's companion)
  const child = spawn('unshare', ['-m', '--propagation', 'private', 'sh', '-c', `exec 3>&1 1>&2; ${script}`, 'sh', ...command], {
    env: { ...env, JOURNALD, IDENT: identifier, SELECT: select.join(' ') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const r = { stdout: '', stderr: '', status: null as number | null };
  child.stdout.on('data', (d: Buffer) => (r.stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (r.stderr += d.toString()));
  const kill = setTimeout(() => child.kill('SIGKILL'), 120_000);
  r.status = await new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  clearTimeout(kill);
  const parse = (text: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as JournalEntry);
  const [all, selected = ''] = r.stdout.split('--- selected\n');
  return { entries: parse(all), selected: parse(selected), status: r.status, stderr: r.stderr };
}

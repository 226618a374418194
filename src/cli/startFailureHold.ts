// A service that cannot start for a reason only a person can fix (its configuration or identity: exit 3) waits
// before it exits. systemd restarts the unit 2 s after every exit and never gives up (StartLimitIntervalSec=0: a
// speaker must survive everything else), so such an error restarted node ~43,000 times a day, each start a
// second of a small board's CPU and lines in the journal on its SD card. Holding START_FAILURE_HOLD_MS (systemd is
// told, EXTEND_TIMEOUT_USEC, so its start timeout does not cut it short, and why, STATUS=) makes that one start a
// minute; a fix is picked up within the minute, or at once with `systemctl restart`. Only under systemd
// (NOTIFY_SOCKET): a person at a terminal gets the error at once.
import { createSdNotifier } from '../common/sdNotify.js';

export const START_FAILURE_HOLD_MS = 60_000;
/** Any other failure before READY=1 (a native addon that no longer loads after a Node or Debian upgrade, a port
 *  taken, a full disk under the companion's database) held nothing and restarted every 2 s forever too. It may
 *  also mend itself (a port freed), so a shorter hold: about 2,900 starts a day at most, not 43,000. */
export const OTHER_START_FAILURE_HOLD_MS = 30_000;
/** The hold when systemd cannot be told to extend its start timeout (TimeoutStartSec=30 in the agent's unit). */
const UNTOLD_HOLD_MS = 20_000;

let serviceStarting = false;
/** Called by the commands a unit starts (`run`, `companion`): only their failures are held. Any other command run
 *  where NOTIFY_SOCKET is set (a script of a Type=notify unit, a container run with --sdnotify) exits at once. */
export function markServiceStart(): void {
  serviceStarting = true;
}
export function isServiceStart(): boolean {
  return serviceStarting;
}

/** Resolves after holdMs; at once when not under systemd. `notifySocket`: $NOTIFY_SOCKET as the process started
 *  (the daemon's notifier removes it from the environment). SIGTERM / SIGINT end the wait by that signal, so
 *  `systemctl stop` neither waits nor records a failure. */
export async function holdStartFailure(why: string, notifySocket: string | undefined, holdMs = START_FAILURE_HOLD_MS): Promise<void> {
  if (!notifySocket) return;
  let notifier: ReturnType<typeof createSdNotifier>;
  try {
    notifier = createSdNotifier({ NOTIFY_SOCKET: notifySocket });
  } catch {
    // systemd cannot be told (the speaker-sys addon does not load, an unusable NOTIFY_SOCKET): still not a restart
    // every 2 s, but within the unit's start timeout (30 s), which systemd would otherwise end with a kill
    notifier = { notify: () => false, status: () => false, close: () => undefined } as unknown as ReturnType<typeof createSdNotifier>;
    holdMs = Math.min(holdMs, UNTOLD_HOLD_MS);
  }
  notifier.notify(`EXTEND_TIMEOUT_USEC=${(holdMs + 10_000) * 1000}`);
  notifier.status(`not started, retrying in ${holdMs / 1000} s: ${why.split('\n')[0]}`);
  const signal = await new Promise<NodeJS.Signals | undefined>((resolve) => {
    const done = (sig?: NodeJS.Signals) => {
      clearTimeout(timer);
      process.off('SIGTERM', done);
      process.off('SIGINT', done);
      resolve(sig);
    };
    const timer = setTimeout(done, holdMs);
    process.once('SIGTERM', done);
    process.once('SIGINT', done);
  });
  notifier.close();
  if (signal) process.kill(process.pid, signal); // our listeners are gone: the default action ends the process
}

// The daemon around a SpeakerAgent: systemd notification (READY once running, WATCHDOG pings from the
// main loop while it is healthy, STOPPING on shutdown), the status socket, and a clean, bounded shutdown on
// SIGTERM/SIGINT (the call is closed so the server sees the peer go; the process is gone within 2 s), and the
// memory keeper (src/common/memoryKeeper.ts) that keeps the resident memory of a day-long call flat.
import type { SpeakerAgent } from '../agent/agent.js';
import { appearedAfter, soundNodeRefused } from '../agent/audio/soundDevicePolicy.js';
import { EXIT_CODES } from '../agent/errors.js';
import { startStatusServer, type StatusServer } from '../agent/statusServer.js';
import type { Logger } from '../common/logger.js';
import { exitNow } from '../common/exitNow.js';
import { startMemoryKeeper, type MemoryKeeper } from '../common/memoryKeeper.js';
import { createSdNotifier, startWatchdog, type SdNotifier } from '../common/sdNotify.js';
import type { DaemonStatus } from './daemonStatus.js';

/** Shutdown must finish within this; the unit's TimeoutStopSec (5 s) is the backstop. */
export const STOP_DEADLINE_MS = 1800;

export interface DaemonOptions {
  agent: SpeakerAgent;
  logger: Logger;
  version: string;
  statusSocket: string;
  companion: { url: string; close(): Promise<void> } | null;
  audio: 'system' | 'virtual';
  /** extra cleanup after the agent stopped (virtual sound card...) */
  onStopped?: () => Promise<void>;
}

export interface Daemon {
  notifier: SdNotifier;
  /** resolves with the exit code once the daemon has shut down */
  done: Promise<number>;
  shutdown(reason: string, code?: number): Promise<number>;
}

export async function startDaemon(o: DaemonOptions): Promise<Daemon> {
  const log = o.logger;
  const notifier = createSdNotifier(process.env, {
    onError: (err) => log.warn({ err: err.message }, 'sd_notify failed'),
  });
  const t0 = performance.now();
  let watchdog: { stop(): void; readonly pings: number } | undefined;
  let statusServer: StatusServer | undefined;
  let memoryKeeper: MemoryKeeper | undefined;
  let policyCheck: NodeJS.Timeout | undefined;

  const snapshot = (): DaemonStatus => ({
    ...o.agent.snapshot(),
    pid: process.pid,
    version: o.version,
    uptimeMs: Math.round(process.uptime() * 1000),
    rssBytes: process.memoryUsage.rss(),
    watchdogPings: watchdog?.pings ?? 0,
    companion: o.companion ? { url: o.companion.url } : null,
    audio: o.audio,
  });

  let resolveDone!: (code: number) => void;
  const done = new Promise<number>((r) => (resolveDone = r));
  let stopping: Promise<number> | undefined;

  const shutdown = (reason: string, code = 0): Promise<number> => {
    if (stopping) return stopping;
    stopping = (async () => {
      log.info({ reason }, 'shutting down');
      notifier.stopping(`stopping: ${reason}`);
      watchdog?.stop();
      memoryKeeper?.stop();
      clearInterval(policyCheck);
      // A stuck close must not keep systemd waiting: exit anyway at the deadline.
      const deadline = setTimeout(() => {
        log.error({ afterMs: STOP_DEADLINE_MS }, 'shutdown took too long; exiting now');
        void exitNow(code || 1); // not process.exit: what is stuck may be a thread inside a native call (exitNow.ts)
      }, STOP_DEADLINE_MS);
      deadline.unref();
      try {
        await o.agent.stop();
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'stopping the agent failed');
      }
      await statusServer?.close().catch(() => undefined);
      await o.companion?.close().catch((err: Error) => log.warn({ err: err.message }, 'closing the companion server failed'));
      await o.onStopped?.().catch(() => undefined);
      notifier.close();
      clearTimeout(deadline);
      resolveDone(code);
      return code;
    })();
    return stopping;
  };

  const onSignal = (sig: NodeJS.Signals) => void shutdown(sig);
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  process.once('SIGHUP', onSignal);

  o.agent.on('state', (state: string) => {
    notifier.status(state === 'connected' ? `call connected to ${o.agent.snapshot().server}` : `call ${state}`);
  });

  try {
    statusServer = await startStatusServer({
      socketPath: o.statusSocket,
      snapshot,
      mode: 0o660,
      // issue #16: the listening state stream (LEDs) and the buttons' commands
      events: {
        current: () => ({ ...o.agent.listeningStatus(), reason: 'current', previous: o.agent.listening.state, at: new Date().toISOString() }),
        subscribe: (send) => {
          o.agent.on('listening', send);
          return () => o.agent.off('listening', send);
        },
      },
      commands: {
        listen: () => ({ ok: o.agent.listen(), listening: o.agent.listeningStatus() }),
        stop: () => (o.agent.stopListening(), { ok: true, listening: o.agent.listeningStatus() }),
        // applied even when mic.json cannot be written; `kept` says whether it survives a restart
        micOff: async () => ({ ok: true, ...(await o.agent.setMicMuted(true)), listening: o.agent.listeningStatus() }),
        micOn: async () => ({ ok: true, ...(await o.agent.setMicMuted(false)), listening: o.agent.listeningStatus() }),
      },
    });
    // a `mic off` that found no socket yet wrote the file only: applied now that the socket answers
    await o.agent.reloadMicMute();
    await o.agent.start(); // opens the sound card: an AgentError('audio') here is a start failure
  } catch (err) {
    // A failed start is undone before the error goes up (the CLI may then wait before exiting, under systemd):
    // a status socket left answering said "call: stopped" as if a daemon ran, a local companion kept its port,
    // and our SIGTERM handler sent STOPPING=1 for a service that never started.
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    process.off('SIGHUP', onSignal);
    await o.agent.stop().catch(() => undefined);
    await statusServer?.close().catch(() => undefined);
    await o.companion?.close().catch(() => undefined);
    await o.onStopped?.().catch(() => undefined);
    notifier.close();
    throw err;
  }
  const readyMs = performance.now() - t0;
  notifier.ready(`running; connecting to ${o.agent.snapshot().server}`);
  log.info({ readyMs: Math.round(readyMs), statusSocket: statusServer.socketPath, systemd: notifier.enabled }, 'agent running');

  memoryKeeper = startAgentMemoryKeeper(o.agent, log);
  if (notifier.enabled) {
    // A sound card that came after this unit started is closed to it until it starts again (soundDevicePolicy.ts):
    // while a device retries, look; if so, exit and let systemd (Restart=always) start it again with the card.
    // 10 s before node's start: systemd made the policy before launch-node.sh ran (node --version first), and a
    // card that came in between would otherwise count as "there before"; a refusal by configuration then costs
    // a restart or two (each moves the start on by RestartSec), not a loop
    const startedAtMs = Date.now() - process.uptime() * 1000 - 10_000;
    let saidConfigured = false;
    policyCheck = setInterval(() => {
      const d = o.agent.snapshot().audioDevices;
      if (d?.microphone !== 'retrying' && d?.speaker !== 'retrying') return;
      const node = soundNodeRefused();
      if (!node) return;
      if (!appearedAfter(node, startedAtMs)) {
        // there before we started: the unit's own configuration refuses it, and a restart would loop
        if (!saidConfigured) log.error({ node }, "the sound card is refused by this service's device policy (EPERM): does an override drop DeviceAllow=char-alsa? (systemctl cat speaker-agent)");
        saidConfigured = true;
        return;
      }
      log.error({ node }, "the sound card appeared after this service started, and systemd's device policy, made at its start, does not cover it (EPERM): restarting to be given it");
      void shutdown('sound card outside the device policy', EXIT_CODES.restart);
    }, 10_000);
    policyCheck.unref();
  }
  if (notifier.watchdogIntervalMs) {
    watchdog = startWatchdog(notifier, {
      intervalMs: notifier.watchdogIntervalMs,
      // Pings stop when the loop is blocked (the timer cannot fire) or badly lagging, and while the agent
      // has stopped keeping its call up (the reconnect loop ended): systemd then restarts us.
      isHealthy: () => o.agent.snapshot().state !== 'stopped',
    });
  }
  return { notifier, done, shutdown };
}

/** The agent's memory keeper: start-up code leaves memory after a minute, at a moment without a conversation
 *  (src/common/memoryKeeper.ts says why). */
export function startAgentMemoryKeeper(agent: Pick<SpeakerAgent, 'listeningStatus'>, logger: Logger): MemoryKeeper {
  return startMemoryKeeper({
    logger,
    efficiencyMode: true,
    pageOutAfterMs: 60_000,
    // no conversation going on; in mode always the service takes turns and there is none to wait for
    pageOutWhen: () => {
      const l = agent.listeningStatus();
      return l.mode === 'always' || !['listening', 'thinking', 'speaking'].includes(l.state);
    },
  });
}

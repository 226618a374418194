// What the running daemon serves on its status socket: the agent's snapshot plus process facts.
// Producer: commands/run.ts; consumer: commands/status.ts.
import type { AgentStatus } from '../agent/agent.js';

export interface DaemonStatus extends AgentStatus {
  pid: number;
  version: string;
  /** ms since the process started */
  uptimeMs: number;
  rssBytes: number;
  /** systemd watchdog pings sent (0 when not under systemd) */
  watchdogPings: number;
  /** when the local companion server was started by `run` (no server configured) */
  companion: { url: string } | null;
  /** 'virtual' when `run` started the virtual sound card (no sound card on this machine) */
  audio: 'system' | 'virtual';
}

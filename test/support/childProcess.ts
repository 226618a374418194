// Runs a TypeScript file in a real child node process (tsx as a loader, so the process IS the script: a
// signal it receives is seen by the parent), for crash and process-level tests.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { VIRTUAL } from './virtualAudio.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');

export function runTs(file: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file, ...args], { env, cwd: ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/**
 * The agent as it runs on a device (test/support/agentProcessMain.ts), in its own process, on the virtual card, with
 * a fresh config and state directory; `env` adds or overrides settings (SPEAKER_AGENT_*). JSON log lines on stdout.
 */
export function spawnAgentProcess(url: string, workspaceKey: string, tag: string, env: NodeJS.ProcessEnv = {}): ChildProcess {
  const all: NodeJS.ProcessEnv = {
    ...process.env,
    SPEAKER_AGENT_SERVER_URL: url,
    SPEAKER_AGENT_WORKSPACE_KEY: workspaceKey,
    SPEAKER_AGENT_CONFIG_DIR: mkdtempSync(path.join(os.tmpdir(), `${tag}-conf-`)),
    SPEAKER_AGENT_STATE_DIR: mkdtempSync(path.join(os.tmpdir(), `${tag}-state-`)),
    SPEAKER_AGENT_MIXER_CONTROL: VIRTUAL.mixerControl,
    ...env,
  };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete all[k];
  return spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/support/agentProcessMain.ts')], { env: all, stdio: ['ignore', 'pipe', 'inherit'] });
}

// The agent's settings: ONE zod schema, stored by `conf` as <configDir>/config.json (mode 0600; configStore.ts
// writes it), with environment overrides (table below, also listed in the README). Reading is a plain JSON read,
// so the daemon does not load conf. A corrupt or invalid file is a clear AgentError('config_invalid'), never a
// silent reset.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as z from '../common/zodMini.js';
import { AgentError } from './errors.js';
import { setPath } from '../common/setPath.js';

const LogLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

export const SettingsSchema = z.object({
  server: z.prefault(z.object({
    /** base URL of the Voice Assistant Service, e.g. https://voice.example.com */
    url: z._default(z.url({ protocol: /^https?$/ }), 'http://127.0.0.1:8080'),
    /** workspace API key from the dashboard (X-Workspace-Key) */
    workspaceKey: z._default(z.string(), ''),
    /** optional analytics label (X-App-Source) */
    appSource: z.optional(z.nonEmpty()),
    /** per-request timeout for the HTTP routes */
    requestTimeoutMs: z._default(z.coercedInt(100, 120_000), 10_000),
  }), {}),
  audio: z.prefault(z.object({
    captureDevice: z._default(z.nonEmpty(), 'default'),
    playbackDevice: z._default(z.nonEmpty(), 'default'),
    /** half: the microphone is gated while the speaker plays (no echo canceller); full: always open */
    duplex: z._default(z.enum(['half', 'full']), 'half'),
    /** how long the mic stays gated after playback stops (room echo tail) */
    echoTailMs: z._default(z.coercedInt(0, 2_000), 200),
  }), {}),
  mixer: z.prefault(z.object({
    /** ALSA card for amixer (-c / -D), e.g. "default", "0", "Headphones" */
    card: z._default(z.nonEmpty(), 'default'),
    /** simple control, e.g. "Master", "PCM", "Speaker"; unset = found automatically */
    control: z.optional(z.nonEmpty()),
  }), {}),
  log: z.prefault(z.object({ level: z._default(LogLevel, 'info') }), {}),
  paths: z.prefault(z.object({
    /** where the identity (client id + secret) lives; default $STATE_DIRECTORY or ~/.local/state/speaker-agent */
    stateDir: z.optional(z.nonEmpty()),
  }), {}),
  reconnect: z.prefault(z.object({
    initialDelayMs: z._default(z.coercedInt(10), 250),
    maxDelayMs: z._default(z.coercedInt(100), 30_000),
    /** wait after the server rejected our credentials (401/404): retrying fast cannot help */
    authRejectedDelayMs: z._default(z.coercedInt(1_000), 60_000),
    /** a failure streak younger than this retries at most every fastRetryMaxDelayMs (server restarts) */
    fastRetryWindowMs: z._default(z.coercedInt(0), 20_000),
    fastRetryMaxDelayMs: z._default(z.coercedInt(10), 1_000),
    /** a call up this long resets the backoff */
    stableAfterMs: z._default(z.coercedInt(0), 10_000),
  }), {}),
  call: z.prefault(z.object({
    /** no RTP, RTCP or data-channel message for this long = the peer is gone */
    livenessTimeoutMs: z._default(z.coercedInt(500, 60_000), 5_000),
    /** session + SDP exchange + ICE/DTLS must finish within this */
    connectTimeoutMs: z._default(z.coercedInt(1_000, 120_000), 15_000),
    /** gather 127.0.0.1 as an ICE host candidate: auto = when the server URL is loopback */
    loopbackCandidates: z._default(z.enum(['auto', 'always', 'never']), 'auto'),
  }), {}),
});

export type Settings = z.infer<typeof SettingsSchema>;

export interface EnvOverride {
  env: string;
  /** dotted settings key */
  key: string;
  description: string;
}

/** Every environment variable the agent reads (the README lists this table). */
export const ENV_OVERRIDES: readonly EnvOverride[] = [
  { env: 'SPEAKER_AGENT_CONFIG_DIR', key: '(config dir)', description: 'directory of config.json (default $CONFIGURATION_DIRECTORY, else ~/.config/speaker-agent)' },
  { env: 'SPEAKER_AGENT_STATE_DIR', key: 'paths.stateDir', description: 'directory of identity.json (default $STATE_DIRECTORY, else ~/.local/state/speaker-agent)' },
  { env: 'SPEAKER_AGENT_SERVER_URL', key: 'server.url', description: 'base URL of the Voice Assistant Service' },
  { env: 'SPEAKER_AGENT_WORKSPACE_KEY', key: 'server.workspaceKey', description: 'workspace API key (X-Workspace-Key)' },
  { env: 'SPEAKER_AGENT_APP_SOURCE', key: 'server.appSource', description: 'analytics label (X-App-Source)' },
  { env: 'SPEAKER_AGENT_CAPTURE_DEVICE', key: 'audio.captureDevice', description: 'PortAudio/ALSA capture device name' },
  { env: 'SPEAKER_AGENT_PLAYBACK_DEVICE', key: 'audio.playbackDevice', description: 'PortAudio/ALSA playback device name' },
  { env: 'SPEAKER_AGENT_DUPLEX', key: 'audio.duplex', description: 'half | full' },
  { env: 'SPEAKER_AGENT_ECHO_TAIL_MS', key: 'audio.echoTailMs', description: 'mic gate hold after playback (ms)' },
  { env: 'SPEAKER_AGENT_MIXER_CARD', key: 'mixer.card', description: 'ALSA card for the volume control' },
  { env: 'SPEAKER_AGENT_MIXER_CONTROL', key: 'mixer.control', description: 'ALSA simple control (Master, PCM, Speaker...)' },
  { env: 'SPEAKER_AGENT_LOG_LEVEL', key: 'log.level', description: 'fatal|error|warn|info|debug|trace|silent' },
  { env: 'SPEAKER_AGENT_LIVENESS_TIMEOUT_MS', key: 'call.livenessTimeoutMs', description: 'quiet time (ms): half of it before a consent check asks the peer; the whole of it when the transport cannot ask' },
  { env: 'SPEAKER_AGENT_LOOPBACK_CANDIDATES', key: 'call.loopbackCandidates', description: 'auto | always | never' },
];

export interface SettingsLocation {
  configDir: string;
  configPath: string;
  stateDir: string;
}

export interface LoadedSettings extends SettingsLocation {
  settings: Settings;
}

type Env = Record<string, string | undefined>;

export function defaultConfigDir(env: Env = process.env): string {
  return env.SPEAKER_AGENT_CONFIG_DIR || firstDir(env.CONFIGURATION_DIRECTORY) || path.join(os.homedir(), '.config', 'speaker-agent');
}

export function defaultStateDir(env: Env = process.env): string {
  return firstDir(env.STATE_DIRECTORY) || path.join(os.homedir(), '.local', 'state', 'speaker-agent');
}

/** systemd passes colon-separated lists when a unit names several directories. */
function firstDir(v: string | undefined): string | undefined {
  return v ? v.split(':')[0] || undefined : undefined;
}

export const CONFIG_FILE_NAME = 'config.json';

/** The content of <configDir>/config.json: {} when there is none; config_invalid when it is not a JSON object. */
export function readConfigFile(configDir: string): Record<string, unknown> {
  const file = path.join(configDir, CONFIG_FILE_NAME);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new AgentError('config_invalid', `cannot read the configuration ${file}: ${(err as Error).message}`, { cause: err });
  }
  let value: unknown;
  try {
    value = text.trim() === '' ? {} : JSON.parse(text);
  } catch (err) {
    throw new AgentError(
      'config_invalid',
      `cannot read the configuration ${file}: ${(err as Error).message}. Fix or remove the file (it is JSON), then start again.`,
      { cause: err },
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new AgentError('config_invalid', `the configuration ${file} must hold a JSON object. Fix or remove the file, then start again.`);
  }
  return value as Record<string, unknown>;
}

/** Validates a raw settings object (file content with overrides applied) into Settings. */
export function parseSettings(raw: unknown, source = 'settings'): Settings {
  const r = SettingsSchema.safeParse(raw ?? {});
  if (!r.success) {
    const lines = r.error.issues.map((i) => `  ${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new AgentError('config_invalid', `invalid ${source}:\n${lines.join('\n')}`, { cause: r.error });
  }
  return r.data;
}

/** Loads config.json (if any) + environment overrides. Throws AgentError('config_invalid') with a clear message. */
export function loadSettings(opts: { env?: Env; configDir?: string } = {}): LoadedSettings {
  const env = opts.env ?? process.env;
  const configDir = opts.configDir ?? defaultConfigDir(env);
  const raw = readConfigFile(configDir);
  const configPath = path.join(configDir, CONFIG_FILE_NAME);
  for (const o of ENV_OVERRIDES) {
    const v = env[o.env];
    if (v !== undefined && v !== '' && !o.key.startsWith('(')) setPath(raw, o.key, v);
  }
  const settings = parseSettings(raw, `configuration (${configPath} and SPEAKER_AGENT_* variables)`);
  const stateDir = settings.paths.stateDir ?? defaultStateDir(env);
  return { settings, configDir, configPath, stateDir };
}

/** Checks that the settings needed to talk to the server are present. */
export function requireServerSettings(s: Settings): void {
  if (!s.server.workspaceKey) {
    throw new AgentError(
      'config_invalid',
      'no workspace key: set server.workspaceKey in config.json or SPEAKER_AGENT_WORKSPACE_KEY ' +
        '(the key is in the dashboard under workspace settings)',
    );
  }
}

export function isLoopbackUrl(url: string): boolean {
  try {
    const h = new URL(url).hostname.replace(/^\[|\]$/g, '');
    return h === 'localhost' || h === '::1' || /^127\./.test(h);
  } catch {
    return false;
  }
}

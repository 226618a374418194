// The agent's settings: ONE zod schema, stored by `conf` as <configDir>/config.json (mode 0600; configStore.ts
// writes it), with environment overrides (table below, also listed in the README). Reading is a plain JSON read,
// so the daemon does not load conf. A corrupt or invalid file is a clear AgentError('config_invalid'), never a
// silent reset.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as z from '../common/zodMini.js';
import { envOverrides, unknownKeys, withEnv, type EnvOverride } from '../common/zodMini.js';
import { AgentError } from './errors.js';
import { jsonSyntaxError } from '../common/jsonSyntax.js';
import { setPath } from '../common/setPath.js';
import { DEFAULT_ECHO_TAIL_MS } from './audio/echoGate.js';
import { DEFAULT_WAKE_PHRASE, DEFAULT_WAKE_SENSITIVITY, WAKE_ENGINES, WAKE_START_TIMEOUT_MS } from './wake/wakeWord.js';

const LogLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

export const SettingsSchema = z.object({
  server: z.prefault(z.object({
    /** base URL of the Voice Assistant Service, e.g. https://voice.example.com */
    url: withEnv(z._default(z.url({ protocol: /^https?$/ }), 'http://127.0.0.1:8080'), 'SPEAKER_AGENT_SERVER_URL', 'base URL of the Voice Assistant Service'),
    /** workspace API key from the dashboard (X-Workspace-Key) */
    workspaceKey: withEnv(z._default(z.string(), ''), 'SPEAKER_AGENT_WORKSPACE_KEY', 'workspace API key (X-Workspace-Key)'),
    /** optional analytics label (X-App-Source) */
    appSource: withEnv(z.optional(z.nonEmpty()), 'SPEAKER_AGENT_APP_SOURCE', 'analytics label (X-App-Source)'),
    /** spec: the Voice Assistant Service's realtime routes; openai-realtime: the GA WebRTC interface
     *  (POST /v1/realtime/calls with a client key from tokenUrl) of the widely used realtime protocol */
    protocol: withEnv(z._default(z.enum(['spec', 'openai-realtime']), 'spec'), 'SPEAKER_AGENT_SERVER_PROTOCOL', 'spec or openai-realtime'),
    /** openai-realtime: the endpoint that mints client keys for this device (gets the device headers);
     *  default {url}/v1/realtime/client_secrets (the companion's) */
    tokenUrl: withEnv(z.optional(z.url({ protocol: /^https?$/ })), 'SPEAKER_AGENT_TOKEN_URL', 'openai-realtime: client key endpoint (default {server.url}/v1/realtime/client_secrets)'),
    /** per-request timeout for the HTTP routes */
    requestTimeoutMs: z._default(z.coercedInt(100, 120_000), 10_000),
  }), {}),
  audio: z.prefault(z.object({
    captureDevice: withEnv(z._default(z.nonEmpty(), 'default'), 'SPEAKER_AGENT_CAPTURE_DEVICE', 'PortAudio/ALSA capture device name'),
    playbackDevice: withEnv(z._default(z.nonEmpty(), 'default'), 'SPEAKER_AGENT_PLAYBACK_DEVICE', 'PortAudio/ALSA playback device name'),
    /** auto: the agent cancels the speaker's echo and the microphone stays open (the half-duplex gate only while
     *  the canceller has not converged or has diverged); half: the microphone is gated while the speaker plays
     *  (no canceller); full: always open, no canceller (the sound server cancels echo) */
    duplex: withEnv(z._default(z.enum(['auto', 'half', 'full']), 'auto'), 'SPEAKER_AGENT_DUPLEX', 'auto, half or full'),
    /** how long the mic stays gated after playback stops (room echo tail) */
    echoTailMs: withEnv(z._default(z.coercedInt(0, 2_000), DEFAULT_ECHO_TAIL_MS), 'SPEAKER_AGENT_ECHO_TAIL_MS', 'mic gate hold after playback (ms)'),
  }), {}),
  mixer: z.prefault(z.object({
    /** ALSA card for amixer (-c / -D), e.g. "default", "0", "Headphones" */
    card: withEnv(z._default(z.nonEmpty(), 'default'), 'SPEAKER_AGENT_MIXER_CARD', 'ALSA card for the volume control'),
    /** simple control, e.g. "Master", "PCM", "Speaker"; unset = found automatically */
    control: withEnv(z.optional(z.nonEmpty()), 'SPEAKER_AGENT_MIXER_CONTROL', 'ALSA simple control (Master, PCM, Speaker...)'),
  }), {}),
  listening: z.prefault(z.object({
    /** wake: the microphone goes to the service only after the wake word; always: always (services that take
     *  turns themselves); manual: only `speaker-agent listen` / the status socket opens it (push-to-talk) */
    mode: withEnv(z._default(z.enum(['wake', 'always', 'manual']), 'wake'), 'SPEAKER_AGENT_LISTENING_MODE', 'wake, always or manual'),
    wakePhrase: withEnv(z._default(z.nonEmpty(), DEFAULT_WAKE_PHRASE), 'SPEAKER_AGENT_WAKE_PHRASE', 'the wake word or phrase'),
    /** auto: openWakeWord when the phrase has a model (built in: hey jarvis, alexa, hey mycroft, hey rhasspy; or
     *  wakeModel) and ONNX Runtime runs on this board, else pocketsphinx (any phrase of dictionary words, weaker) */
    wakeEngine: withEnv(z._default(z.enum(WAKE_ENGINES), 'auto'), 'SPEAKER_AGENT_WAKE_ENGINE', 'auto, openwakeword or pocketsphinx'),
    /** an openWakeWord phrase model (.onnx) trained for wakePhrase */
    wakeModel: withEnv(z.optional(z.nonEmpty()), 'SPEAKER_AGENT_WAKE_MODEL', 'openWakeWord phrase model file (.onnx)'),
    /** 0..1: higher hears the wake word more readily, and false accepts more often */
    wakeSensitivity: withEnv(z._default(z.coercedNumber().check(z.minimum(0), z.maximum(1)), DEFAULT_WAKE_SENSITIVITY), 'SPEAKER_AGENT_WAKE_SENSITIVITY', 'wake word sensitivity, 0..1'),
    /** a wake word engine whose thread has not started in this long is given up and tried again (a model read that
     *  never returns); raise it for a board that is slow to load it cold. The doctor waits a minute at most per engine. */
    wakeStartTimeoutMs: withEnv(z._default(z.coercedInt(1_000, 3_600_000), WAKE_START_TIMEOUT_MS), 'SPEAKER_AGENT_WAKE_START_TIMEOUT_MS', 'give up a wake word engine start after (ms)'),
    /** an open conversation with no speech and no answer for this long goes back to idle */
    silenceMs: withEnv(z._default(z.coercedInt(1_000, 120_000), 8_000), 'SPEAKER_AGENT_LISTENING_SILENCE_MS', 'back to idle after this much silence (ms)'),
    /** after an answer, listening reopens without the wake word for this long (0: never) */
    followUpMs: withEnv(z._default(z.coercedInt(0, 60_000), 5_000), 'SPEAKER_AGENT_FOLLOW_UP_MS', 'follow-up window after an answer (ms; 0: none)'),
    /** audio from before the end of the wake word sent when listening opens: short, or the service hears the
     *  wake word as part of the command (README, Listening) */
    preRollMs: z._default(z.coercedInt(0, 2_000), 50),
  }), {}),
  earcons: z.prefault(z.object({
    /** each: "default" (a generated sound), "off", or the path of a WAV file */
    opened: z._default(z.nonEmpty(), 'default'),
    closed: z._default(z.nonEmpty(), 'default'),
    muted: z._default(z.nonEmpty(), 'default'),
    unmuted: z._default(z.nonEmpty(), 'default'),
    unreachable: z._default(z.nonEmpty(), 'default'),
  }), {}),
  log: z.prefault(z.object({ level: withEnv(z._default(LogLevel, 'info'), 'SPEAKER_AGENT_LOG_LEVEL', 'fatal, error, warn, info, debug, trace or silent') }), {}),
  paths: z.prefault(z.object({
    /** where the identity (client id + secret) lives; default $STATE_DIRECTORY or ~/.local/state/speaker-agent */
    stateDir: withEnv(z.optional(z.nonEmpty()), 'SPEAKER_AGENT_STATE_DIR', 'directory of identity.json (default $STATE_DIRECTORY, else ~/.local/state/speaker-agent)'),
  }), {}),
  /** Each with a maximum: a delay over setTimeout's 2^31-1 ms fires after 1 ms, and a device whose credentials
   *  were rejected would then ask the server again and again, the very thing authRejectedDelayMs is for. */
  reconnect: z.prefault(z.object({
    initialDelayMs: z._default(z.coercedInt(10, 60_000), 250),
    maxDelayMs: z._default(z.coercedInt(100, 3_600_000), 30_000),
    /** wait after the server rejected our credentials (401/404): retrying fast cannot help */
    authRejectedDelayMs: z._default(z.coercedInt(1_000, 86_400_000), 60_000),
    /** a failure streak younger than this retries at most every fastRetryMaxDelayMs (server restarts) */
    fastRetryWindowMs: z._default(z.coercedInt(0, 600_000), 20_000),
    fastRetryMaxDelayMs: z._default(z.coercedInt(10, 60_000), 1_000),
    /** a call up this long resets the backoff */
    stableAfterMs: z._default(z.coercedInt(0, 3_600_000), 10_000),
  }), {}),
  call: z.prefault(z.object({
    /** no RTP, RTCP or data-channel message for this long = the peer is gone */
    livenessTimeoutMs: withEnv(z._default(z.coercedInt(500, 60_000), 5_000), 'SPEAKER_AGENT_LIVENESS_TIMEOUT_MS', 'quiet time (ms): half of it before a consent check asks the peer; the whole of it when the transport cannot ask'),
    /** session + SDP exchange + ICE/DTLS must finish within this */
    connectTimeoutMs: z._default(z.coercedInt(1_000, 120_000), 15_000),
    /** gather 127.0.0.1 as an ICE host candidate: auto = when the server URL is loopback */
    loopbackCandidates: withEnv(z._default(z.enum(['auto', 'always', 'never']), 'auto'), 'SPEAKER_AGENT_LOOPBACK_CANDIDATES', 'auto, always or never'),
  }), {}),
});

export type Settings = z.infer<typeof SettingsSchema>;
export type { EnvOverride };

type Env = Record<string, string | undefined>;

/** The variable that locates config.json: not a setting (the file cannot name its own place). */
export const CONFIG_DIR_KEY = '(config dir)';

/** Every environment variable the agent's settings read (the README lists this table), derived from the schema. */
export const ENV_OVERRIDES: readonly EnvOverride[] = [
  { env: 'SPEAKER_AGENT_CONFIG_DIR', key: CONFIG_DIR_KEY, description: 'directory of config.json (default $CONFIGURATION_DIRECTORY, else ~/.config/speaker-agent)' },
  ...envOverrides(SettingsSchema),
];

/** The variable's raw value for a setting (dotted key), for the callers that must know where a value came from. */
export function settingFromEnv(key: string, env: Env = process.env): string | undefined {
  const o = ENV_OVERRIDES.find((x) => x.key === key);
  return o ? env[o.env] : undefined;
}

/** Sets the variable of a setting (the CLI's --config-dir, --state-dir and --log-level reach every module so). */
export function setSettingInEnv(key: string, value: string, env: Env = process.env): void {
  const o = ENV_OVERRIDES.find((x) => x.key === key);
  if (!o) throw new Error(`no environment variable for the setting ${key}`);
  env[o.env] = value;
}

export interface SettingsLocation {
  configDir: string;
  configPath: string;
  stateDir: string;
}

export interface LoadedSettings extends SettingsLocation {
  settings: Settings;
  /** keys of config.json the schema does not know (ignored; said at start and by doctor: a typo?) */
  unknownKeys: string[];
}

export function defaultConfigDir(env: Env = process.env): string {
  return settingFromEnv(CONFIG_DIR_KEY, env) || firstDir(env.CONFIGURATION_DIRECTORY) || path.join(os.homedir(), '.config', 'speaker-agent');
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
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return {};
    // a user without sudo on an installed speaker: not a broken file (removing it would lose the enrollment)
    if (code === 'EACCES' || code === 'EPERM') {
      throw new AgentError('config_invalid', `cannot read the configuration ${file}: permission denied. Run it with sudo (a speaker's configuration is root's and the service's).`, { cause: err });
    }
    throw new AgentError('config_invalid', `cannot read the configuration ${file}: ${(err as Error).message}`, { cause: err });
  }
  let value: unknown;
  try {
    value = text.trim() === '' ? {} : JSON.parse(text);
  } catch (err) {
    throw new AgentError(
      'config_invalid',
      `cannot read the configuration ${file}: ${jsonSyntaxError(err, text)}. Fix or remove the file (it is JSON), then start again.`,
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
  const unknown = unknownKeys(SettingsSchema, raw);
  const configPath = path.join(configDir, CONFIG_FILE_NAME);
  for (const o of ENV_OVERRIDES) {
    const v = env[o.env];
    if (v !== undefined && v !== '' && !o.key.startsWith('(')) setPath(raw, o.key, v);
  }
  const settings = parseSettings(raw, `configuration (${configPath} and SPEAKER_AGENT_* variables)`);
  const stateDir = settings.paths.stateDir ?? defaultStateDir(env);
  return { settings, configDir, configPath, stateDir, unknownKeys: unknown };
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

// The companion server's settings: ONE zod schema with defaults, overridable by SPEAKER_AGENT_COMPANION_*
// environment variables (table below, listed in the README) and by explicit overrides (CLI flags, tests).
// Invalid values are a clear CompanionSettingsError listing every bad key, never a silent default.
import os from 'node:os';
import path from 'node:path';
import * as z from '../common/zodMini.js';
import { envOverrides, withEnv, type EnvOverride } from '../common/zodMini.js';
import { setPath } from '../common/setPath.js';
import { jsonSyntaxError } from '../common/jsonSyntax.js';
import { CodedError, type CodedErrorOptions } from '../common/errors.js';

/** Two-way calls one core of the development machine holds with no late frame (bench companion-realtime, issue
 *  #2: 32 and 28 in two runs). A Raspberry Pi core holds fewer: set realtime.maxCalls there. */
export const CALLS_PER_CORE = 32;
const DEFAULT_MAX_CALLS = CALLS_PER_CORE * os.availableParallelism();

// zod/mini, as the agent's schemas (src/common/zodMini.ts): one zod flavour in the bundle keeps the agent's chunk
// small (classic zod anywhere would put all of zod's core and locales in a chunk the agent shares).

const LogLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/** A URL with a user name or password in it: refused, since a URL goes into errors (Node's fetch refuses it with
 *  an error that quotes it whole, and an adapter's error reaches the devices) and logs; each key has its own
 *  setting (tts.http.apiKey, the *.apiKeyEnv variables). */
const noUserInfo = z.refine<string>((v) => !v || !hasUserInfo(v), 'a user name or password in the URL: give the key in its own setting (tts.http.apiKey, apiKeyEnv), not in the URL');

function hasUserInfo(v: string): boolean {
  try {
    const u = new URL(v);
    return u.username !== '' || u.password !== '';
  } catch {
    return false;
  }
}

const IceServerSchema = z.object({
  urls: z.array(z.nonEmpty()).check(z.minLength(1)),
  username: z._default(z.string(), ''),
  credential: z._default(z.string(), ''),
});

export const CompanionSettingsSchema = z.object({
  /** interface to listen on; 127.0.0.1 keeps the server local, 0.0.0.0 serves the LAN */
  host: withEnv(z._default(z.nonEmpty(), '127.0.0.1'), 'SPEAKER_AGENT_COMPANION_HOST', 'listen address (default 127.0.0.1)'),
  /** TCP port; 0 = an ephemeral port (tests) */
  port: withEnv(z._default(z.coercedInt(0, 65_535), 8787), 'SPEAKER_AGENT_COMPANION_PORT', 'listen port (default 8787; 0 = ephemeral)'),
  /** SQLite database, audio files and keys live here */
  dataDir: withEnv(z._default(z.nonEmpty(), () => defaultDataDir()), 'SPEAKER_AGENT_COMPANION_DATA_DIR', 'database, audio and keys (default $STATE_DIRECTORY, else ~/.local/share/speaker-agent/companion)'),
  /** base of signed audio URLs as devices reach the server (e.g. http://speaker-hub.local:8787);
   *  unset = http://<host>:<listening port> */
  publicUrl: withEnv(z.optional(z.url({ protocol: /^https?$/ })), 'SPEAKER_AGENT_COMPANION_PUBLIC_URL', 'base URL of signed audio URLs (default http://<host>:<port>)'),
  /** lifetime of signed audio URLs (expires_in) */
  signedUrlTtlSeconds: withEnv(z._default(z.coercedInt(1, 86_400), 300), 'SPEAKER_AGENT_COMPANION_SIGNED_URL_TTL', 'signed audio URL lifetime in seconds (default 300)'),
  /** largest accepted clone upload (and JSON body); bigger requests get 413 PAYLOAD_TOO_LARGE */
  maxUploadBytes: withEnv(z._default(z.coercedInt(1024, 512 * 1024 * 1024), 20 * 1024 * 1024), 'SPEAKER_AGENT_COMPANION_MAX_UPLOAD_BYTES', 'largest clone upload in bytes (default 20 MiB)'),
  /** a request not received whole in this time is answered 408 REQUEST_TIMEOUT and its connection closed: a
   *  device that lost power or Wi-Fi halfway through an upload sends no FIN, and its socket, open temp file and
   *  half-written upload were held for ever (fastify's default is no limit). 300 s, Node's own default, carries a
   *  20 MiB clone upload at ~0.6 Mbit/s. */
  requestTimeoutMs: withEnv(z._default(z.coercedInt(1_000, 3_600_000), 300_000), 'SPEAKER_AGENT_COMPANION_REQUEST_TIMEOUT_MS', 'a request not received whole in this many ms gets 408 (default 300000)'),
  /** open: a new client id with a valid workspace key enrolls its secret (trust on first use);
   *  closed: only clients already known (enrolled earlier, or re-enabled by `client reset`) are accepted */
  enrollment: withEnv(z._default(z.enum(['open', 'closed']), 'open'), 'SPEAKER_AGENT_COMPANION_ENROLLMENT', 'open (trust on first use) or closed'),
  /** the offline speech recogniser (pocketsphinx): one decoding thread per utterance decoded at the same time */
  recognizer: z.prefault(
    z.object({
      /** most utterances decoded at once; each thread holds a decoder pair (~80 MB) while it runs */
      threads: withEnv(z._default(z.coercedInt(1, 32), 2), 'SPEAKER_AGENT_COMPANION_RECOGNIZER_THREADS', 'most utterances decoded at once (default 2; ~80 MB per thread)'),
      /** threads kept loaded while idle (at most `threads`); the others start when utterances overlap */
      keepThreads: withEnv(z._default(z.coercedInt(1, 32), 1), 'SPEAKER_AGENT_COMPANION_RECOGNIZER_KEEP_THREADS', 'decoding threads kept loaded while idle (default 1)'),
      /** a thread beyond keepThreads is stopped after this long without an utterance */
      idleStopMs: z._default(z.coercedInt(1_000, 86_400_000), 60_000),
    }),
    {},
  ),
  tts: z.prefault(
    z.object({
      /** espeak: offline, in-process (default); http: an external neural TTS server */
      adapter: withEnv(z._default(z.enum(['espeak', 'http']), 'espeak'), 'SPEAKER_AGENT_COMPANION_TTS_ADAPTER', 'espeak (offline, default) or http (external neural TTS server)'),
      http: z.prefault(
        z.object({
          baseUrl: withEnv(z._default(z.string().check(noUserInfo), ''), 'SPEAKER_AGENT_COMPANION_TTS_URL', 'base URL of the external TTS server (tts.adapter=http)'),
          apiKey: withEnv(z.optional(z.string()), 'SPEAKER_AGENT_COMPANION_TTS_API_KEY', 'API key of the external TTS server'),
          timeoutMs: z._default(z.coercedInt(100, 600_000), 60_000),
        }),
        {},
      ),
    }),
    {},
  ),
  realtime: z.prefault(
    z.object({
      /** handed to devices in the session resource; [] = host candidates only (LAN) */
      iceServers: withEnv(z._default(z.array(IceServerSchema), []), 'SPEAKER_AGENT_COMPANION_ICE_SERVERS', 'JSON array of {urls, username, credential}', true),
      /** which assistant transcript event names the server emits (spec section 6: both exist) */
      transcriptFamily: withEnv(z._default(z.enum(['ga', 'legacy']), 'ga'), 'SPEAKER_AGENT_COMPANION_TRANSCRIPT_FAMILY', 'ga or legacy assistant transcript event names'),
      /** simultaneous calls the server accepts (default: what this machine holds, CALLS_PER_CORE per core) */
      maxCalls: withEnv(z._default(z.coercedInt(1, 4096), DEFAULT_MAX_CALLS), 'SPEAKER_AGENT_COMPANION_MAX_CALLS', 'simultaneous calls (default 32 per core)'),
      /** a call without media or data-channel traffic for this long is closed */
      idleTimeoutMs: withEnv(z._default(z.coercedInt(1_000, 3_600_000), 60_000), 'SPEAKER_AGENT_COMPANION_IDLE_TIMEOUT_MS', 'close a silent call after this many ms'),
      /** a call whose ICE/DTLS never completes is closed after this long */
      connectTimeoutMs: z._default(z.coercedInt(1_000, 120_000), 15_000),
      /** gather 127.0.0.1 as a host candidate (werift skips loopback); 'auto' = when host is a loopback address.
       *  The agent's words (always/never); 'on'/'off', this setting's values before, are still read. */
      loopbackCandidates: z._default(
        z.pipe(
          z.enum(['auto', 'always', 'never', 'on', 'off']),
          z.transform((v): 'auto' | 'always' | 'never' => (v === 'on' ? 'always' : v === 'off' ? 'never' : v)),
        ),
        'auto',
      ),
      /** silence after the user's last word before the turn ends */
      vadHangoverMs: z._default(z.coercedInt(100, 3_000), 300),
      /** the assistant's espeak-ng voice */
      voice: z.prefault(
        z.object({ language: z._default(z.nonEmpty(), 'en-us'), variant: z.optional(z.string()), rate: z.optional(z.coercedInt(80, 450)) }),
        {},
      ),
      /** Gateway: with a url, every device call (spec or GA route) is forwarded to an upstream realtime service
       *  of the widely used protocol (its GA WebRTC interface); the API key stays here, never on the device. */
      upstream: z.prefault(
        z.object({
          url: withEnv(z.optional(z.url({ protocol: /^https?$/ }).check(noUserInfo)), 'SPEAKER_AGENT_COMPANION_UPSTREAM_URL', 'gateway: base URL of an upstream realtime service (e.g. https://api.openai.com)'),
          /** name of the environment variable holding the upstream API key (the key itself is never in settings) */
          apiKeyEnv: withEnv(z._default(z.nonEmpty(), 'OPENAI_API_KEY'), 'SPEAKER_AGENT_COMPANION_UPSTREAM_API_KEY_ENV', 'gateway: name of the variable holding the upstream API key'),
          model: withEnv(z._default(z.nonEmpty(), 'gpt-realtime'), 'SPEAKER_AGENT_COMPANION_UPSTREAM_MODEL', 'gateway: upstream model'),
          instructions: z._default(z.string(), 'You are the voice of a smart speaker in a home. Answer briefly. Use the tools to change the speaker volume.'),
          voice: z.optional(z.nonEmpty()),
          /** per request to the upstream (mint + SDP) */
          timeoutMs: z._default(z.coercedInt(1_000, 60_000), 10_000),
        }),
        {},
      ),
      brain: z.prefault(
        z.object({
          /** rules: offline intent rules; openai: an OpenAI-compatible chat endpoint */
          kind: withEnv(z._default(z.enum(['rules', 'openai']), 'rules'), 'SPEAKER_AGENT_COMPANION_BRAIN', 'rules (offline) or openai (an OpenAI-compatible endpoint)'),
          baseUrl: withEnv(z.optional(z.string().check(noUserInfo)), 'SPEAKER_AGENT_COMPANION_BRAIN_URL', 'base URL of the OpenAI-compatible endpoint'),
          model: withEnv(z.optional(z.string()), 'SPEAKER_AGENT_COMPANION_BRAIN_MODEL', 'model name for the brain'),
          /** name of the environment variable holding the API key (the key itself is never in settings) */
          apiKeyEnv: withEnv(z.optional(z.string()), 'SPEAKER_AGENT_COMPANION_BRAIN_API_KEY_ENV', 'name of the variable holding the brain API key'),
        }),
        {},
      ),
    }),
    {},
  ),
  log: z.prefault(z.object({ level: withEnv(z._default(LogLevel, 'info'), 'SPEAKER_AGENT_LOG_LEVEL', 'fatal, error, warn, info, debug, trace or silent') }), {}),
});

export type CompanionSettings = z.infer<typeof CompanionSettingsSchema>;
/** What callers may pass: any subset, nested sections partial too. */
export type CompanionSettingsInput = z.input<typeof CompanionSettingsSchema>;

type Env = Record<string, string | undefined>;

export class CompanionSettingsError extends CodedError<'CONFIG_INVALID'> {
  override name = 'CompanionSettingsError';
  constructor(message: string, opts?: CodedErrorOptions) {
    super('CONFIG_INVALID', message, opts);
  }
}

/** Every environment variable the companion server's settings read (the README lists this table), derived from
 *  the schema. */
export const COMPANION_ENV_OVERRIDES: readonly EnvOverride[] = envOverrides(CompanionSettingsSchema);

/** The variable's raw value for a setting (dotted key), for the callers that must know where a value came from. */
export function companionSettingFromEnv(key: string, env: Env = process.env): string | undefined {
  const o = COMPANION_ENV_OVERRIDES.find((x) => x.key === key);
  return o ? env[o.env] : undefined;
}


export function defaultDataDir(env: Env = process.env): string {
  const state = env.STATE_DIRECTORY?.split(':')[0];
  return state || path.join(os.homedir(), '.local', 'share', 'speaker-agent', 'companion');
}

function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) continue;
    const b = out[k];
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object' && !Array.isArray(b)
        ? deepMerge(b as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}

/** Defaults <- environment <- overrides (overrides win: they are explicit CLI flags or test settings). */
export function loadCompanionSettings(overrides: CompanionSettingsInput = {}, env: Env = process.env): CompanionSettings {
  const fromEnv: Record<string, unknown> = {};
  for (const o of COMPANION_ENV_OVERRIDES) {
    const v = env[o.env];
    if (v === undefined || v === '') continue;
    let value: unknown = v;
    if (o.json) {
      try {
        value = JSON.parse(v);
      } catch (err) {
        throw new CompanionSettingsError(`${o.env}: ${jsonSyntaxError(err, v)}`, { cause: err });
      }
    }
    setPath(fromEnv, o.key, value);
  }
  if (!fromEnv.dataDir && !(overrides as { dataDir?: string }).dataDir) fromEnv.dataDir = defaultDataDir(env);
  const raw = deepMerge(fromEnv, overrides as Record<string, unknown>);
  const r = CompanionSettingsSchema.safeParse(raw);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `  ${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new CompanionSettingsError(`invalid companion settings (SPEAKER_AGENT_COMPANION_* variables or options):\n${lines.join('\n')}`, {
      cause: r.error,
    });
  }
  return r.data;
}

// `speaker-agent doctor`: every check a support engineer would ask for, each with the fix for its failure.
// Checks are independent functions returning a CheckResult; the ones that need nothing from each other run
// concurrently (sound card checks in one lane, server checks in another) so the whole run takes seconds.
import { promises as fs } from 'node:fs';
import { createRequire } from 'node:module';
import { type AudioBackend } from '../agent/audio/audioDevice.js';
import { Call } from '../agent/call.js';
import { AgentError } from '../agent/errors.js';
import { fingerprint, identityPath, loadIdentity, type Identity } from '../agent/identity.js';
import { audioBackend, openMixer, serviceClient, transportFactory } from '../agent/device.js';
import { quietNativeStderr } from '../agent/audio/quietStderr.js';
import { micStatePath, readMicMuted } from '../agent/micMute.js';
import { MixerError } from '../agent/mixer/mixer.js';
import type { ServiceClient } from '../agent/serviceClient.js';
import { defaultStateDir, loadSettings, settingFromEnv, type LoadedSettings } from '../agent/settings.js';
import { statusSocketCandidates } from '../agent/statusServer.js';
import { rebuildAdvice } from '../common/addonAdvice.js';
import { loadOpus, type OpusModule } from '../common/audio/opusBinding.js';
import { LibopusDecoder, libopusVersion } from '../common/audio/libopusDecoder.js';
import { certificateClockCode, certificateClockProblem } from '../common/certificateClock.js';
import { certificateTrustCode, certificateTrustFix, certificateTrustSummary } from '../common/certificateTrust.js';
import { silentLogger } from '../common/logger.js';
import { CHANNELS, FRAME_SAMPLES, SAMPLE_RATE } from '../protocol/media.js';
import { checkEcho } from './echoCheck.js';
import { rejectionAdvice } from './rejectionAdvice.js';
import { readStatusFrom } from './statusClient.js';
import { checkWakeWord } from './wakeCheck.js';
import { VOLATILE_STATE_FIX, volatileStorage } from '../agent/stateStorage.js';

export type CheckStatus = 'pass' | 'warn' | 'fail' | 'skip';

export interface CheckResult {
  name: string;
  status: CheckStatus;
  detail: string;
  /** what to do about a failure or warning */
  fix?: string;
  /** exit-code category when it fails */
  category?: 'config' | 'auth' | 'network' | 'audio' | 'other';
  ms: number;
}

export interface DoctorOptions {
  /** skip the realtime call (ICE/data channel) check */
  skipCall?: boolean;
  /** skip the echo check (it plays a 2.5 s noise probe through the speaker, twice when the speaker underran) */
  skipEcho?: boolean;
  /** how long the microphone is sampled */
  micMs?: number;
  backend?: () => Promise<AudioBackend>;
}

export interface DoctorReport {
  ok: boolean;
  checks: CheckResult[];
  ms: number;
}

const require = createRequire(import.meta.url);
/** samples this close to zero for the whole window = the microphone delivers digital silence */
const DIGITAL_SILENCE_DBFS = -90;

type Check = () => Promise<Omit<CheckResult, 'ms'>>;

/** On an installed speaker the config, the state directory and the status socket are root's and the service's:
 *  a maker running doctor without sudo meets these, which say nothing about the speaker itself. */
const SUDO_FIX = 'permission denied: run `sudo speaker-agent doctor`';

function permissionDenied(err: unknown): boolean {
  // the errno may sit under an AgentError (settings.ts wraps the read error as its cause)
  for (let e = err as { code?: unknown; errno?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (typeof e.errno === 'number' && (e.code === 'EACCES' || e.code === 'EPERM')) return true;
  }
  return false;
}

/** The running agent's status socket, or the ones this user may not open. Every candidate is tried, the
 *  installed service's /run/speaker-agent one included, with or without a usable config. */
async function findDaemon(candidates: string[]): Promise<{ socketPath?: string; status?: unknown; denied: string[] }> {
  const denied: string[] = [];
  for (const socketPath of candidates) {
    try {
      return { socketPath, status: await readStatusFrom(socketPath, 1000), denied };
    } catch (err) {
      if (permissionDenied(err)) denied.push(socketPath);
    }
  }
  return { denied };
}

async function timed(name: string, check: Check): Promise<CheckResult> {
  const t0 = performance.now();
  try {
    const r = await check();
    return { ...r, ms: Math.round(performance.now() - t0) };
  } catch (err) {
    return { name, status: 'fail', detail: `check crashed: ${(err as Error).message}`, category: 'other', ms: Math.round(performance.now() - t0) };
  }
}

export async function runDoctor(opts: DoctorOptions = {}): Promise<DoctorReport> {
  const t0 = performance.now();
  const results: CheckResult[] = [];

  // --- configuration and identity (everything else depends on these) ---
  let loaded: LoadedSettings | undefined;
  results.push(
    await timed('config', async () => {
      try {
        loaded = loadSettings();
      } catch (err) {
        // a file this user may not read is not broken: never advise removing it
        const fix = permissionDenied(err) ? SUDO_FIX : 'fix the file (it is JSON) or remove it and run `speaker-agent enroll`';
        return { name: 'config', status: 'fail', detail: (err as Error).message, fix, category: 'config' };
      }
      const s = loaded.settings.server;
      // a misspelt key ("workspacekey") is ignored: said beside the failure it explains
      const unknown = loaded.unknownKeys.length ? `; settings it does not know, ignored: ${loaded.unknownKeys.join(', ')}` : '';
      if (!s.workspaceKey) {
        return {
          name: 'config',
          status: 'fail',
          detail: `${loaded.configPath}: valid, but no workspace key (server ${s.url})${unknown}`,
          fix: 'speaker-agent enroll --server-url URL --workspace-key KEY (the key is in the dashboard, workspace settings)',
          category: 'config',
        };
      }
      if (loaded.unknownKeys.length) {
        return {
          name: 'config',
          status: 'warn',
          detail: `${loaded.configPath}: server ${s.url}${unknown}`,
          fix: 'check their spelling against the README (Configuration); remove the ones you do not need',
          category: 'config',
        };
      }
      return { name: 'config', status: 'pass', detail: `${loaded.configPath}: server ${s.url}` };
    }),
  );

  let identity: Identity | undefined;
  results.push(
    await timed('identity', async () => {
      if (!loaded) return { name: 'identity', status: 'skip', detail: 'needs a valid config' };
      const file = identityPath(loaded.stateDir);
      let mode: number;
      try {
        mode = (await fs.stat(file)).mode & 0o777;
      } catch {
        return { name: 'identity', status: 'fail', detail: `no identity at ${file}`, fix: 'speaker-agent enroll', category: 'config' };
      }
      if (mode !== 0o600) {
        return {
          name: 'identity',
          status: 'fail',
          detail: `${file} has mode 0${mode.toString(8)}: the secret is readable by others`,
          fix: `chmod 600 ${file}   (the agent also tightens it when it starts)`,
          category: 'config',
        };
      }
      try {
        identity = (await loadIdentity(loaded.stateDir)).identity;
      } catch (err) {
        return { name: 'identity', status: 'fail', detail: (err as Error).message, fix: 'restore identity.json from a backup (see the message)', category: 'config' };
      }
      return { name: 'identity', status: 'pass', detail: `client ${identity.clientId}, secret ${fingerprint(identity.clientSecret)}, mode 0600` };
    }),
  );

  // --- runtime ---
  results.push(await timed('node', checkNode));
  const addons = await Promise.all([
    // getDevices() initialises PortAudio, whose ALSA probing prints dozens of harmless "ALSA lib ... Unknown PCM" lines
    timed('addon: PortAudio', async () => addon('addon: PortAudio', 'naudiodon2', () => require('naudiodon2'), (m) => quietNativeStderr(() => (m as { getDevices(): unknown[] }).getDevices()).length + ' devices')),
    // loaded as the agent loads it (loadOpus): the package's own loader wants a folder named after this Node's ABI
    // and glibc version, so after a Node or Debian upgrade it failed here while the agent's loader worked
    timed('addon: Opus', async () =>
      addon('addon: Opus', '@discordjs/opus', loadOpus, (m) => {
        const enc = new (m as OpusModule).OpusEncoder(SAMPLE_RATE, CHANNELS);
        return `encodes a 20 ms frame to ${enc.encode(Buffer.alloc(FRAME_SAMPLES * 2)).length} bytes`;
      }),
    ),
    timed('library: libopus', async () => checkLibopus()),
  ]);
  results.push(...addons);

  // without a usable config, where the service keeps its state: the wrapper install.sh writes sets STATE_DIRECTORY
  const stateDir = loaded?.stateDir ?? (settingFromEnv('paths.stateDir') || defaultStateDir());
  const daemon = await findDaemon(statusSocketCandidates(stateDir));
  const daemonRunning = daemon.socketPath;
  results.push(await timed('privacy mute', async () => checkPrivacyMute(stateDir, daemon.status)));
  results.push(
    await timed('state storage', async () => {
      const volatile = volatileStorage(stateDir);
      return volatile
        ? { name: 'state storage', status: 'warn', detail: `the identity and the privacy mute will not survive a reboot: ${volatile}`, fix: VOLATILE_STATE_FIX }
        : { name: 'state storage', status: 'pass', detail: `${stateDir}: on storage that lasts` };
    }),
  );

  // --- sound card lane and server lane, concurrently ---
  const audioLane = async (): Promise<CheckResult[]> => {
    if (!loaded) return [];
    const a = loaded.settings.audio;
    const backend = await (opts.backend ?? audioBackend)().catch(() => undefined);
    const out: CheckResult[] = [];
    out.push(await timed('capture', () => checkCapture(backend, a.captureDevice, opts.micMs ?? 800, daemonRunning)));
    out.push(await timed('playback', () => checkPlayback(backend, a.playbackDevice, daemonRunning)));
    if (!opts.skipEcho) out.push(await timed('echo', () => checkEcho(backend, a.captureDevice, a.playbackDevice, daemonRunning)));
    out.push(await timed('mixer', () => checkMixer(loaded!)));
    out.push(await timed('wake word', () => checkWakeWord(loaded!.settings)));
    return out;
  };
  const serverLane = async (): Promise<CheckResult[]> => {
    if (!loaded || !loaded.settings.server.workspaceKey) return [];
    const out: CheckResult[] = [];
    let serverDate: string | null = null;
    let clockCode: string | undefined;
    const reach = await timed('server reachable', async () => {
      const r = await checkReachable(loaded!.settings.server.url, loaded!.settings.server.requestTimeoutMs);
      serverDate = r.date;
      clockCode = r.clockCode;
      return r.result;
    });
    out.push(reach);
    out.push(await timed('clock', async () => checkClock(serverDate, clockCode)));
    if (reach.status !== 'pass' || !identity) return out;
    const client = serviceClient(loaded.settings, identity);
    const auth = await timed('device headers (TOFU)', () => checkAuth(client, identity!.clientId));
    out.push(auth);
    if (auth.status === 'pass' && !opts.skipCall) out.push(await timed('realtime call', () => checkCall(client, loaded!)));
    return out;
  };
  const [audio, server] = await Promise.all([audioLane(), serverLane()]);
  results.push(...audio, ...server);
  results.push(
    daemonRunning
      ? { name: 'agent service', status: 'pass', detail: `running (status socket ${daemonRunning})`, ms: 0 }
      : daemon.denied.length
        ? { name: 'agent service', status: 'warn', detail: `cannot tell whether it runs: permission denied on ${daemon.denied.join(', ')}`, fix: SUDO_FIX, ms: 0 }
        : { name: 'agent service', status: 'warn', detail: 'not running', fix: 'systemctl start speaker-agent   (or: speaker-agent run)', ms: 0 },
  );

  return { ok: results.every((r) => r.status !== 'fail'), checks: results, ms: Math.round(performance.now() - t0) };
}

async function checkNode(): Promise<Omit<CheckResult, 'ms'>> {
  const [maj, min] = process.versions.node.split('.').map(Number);
  const ok = maj > 20 || (maj === 20 && min >= 10);
  return ok
    ? { name: 'node', status: 'pass', detail: `Node ${process.versions.node} on ${process.arch}` }
    : { name: 'node', status: 'fail', detail: `Node ${process.versions.node} is too old`, fix: 'install Node 20.10 or newer', category: 'other' };
}

/** The privacy mute (`speaker-agent mic off`): a muted speaker hears neither the wake word nor anyone, whatever
 *  else passes. The running agent's state when it answers, else <stateDir>/mic.json, the state it starts with
 *  (unreadable or corrupt counts as muted: micMute.ts). */
function checkPrivacyMute(stateDir: string, daemonStatus: unknown): Omit<CheckResult, 'ms'> {
  const name = 'privacy mute';
  const file = micStatePath(stateDir);
  const live = (daemonStatus as { listening?: { micMuted?: unknown } } | undefined)?.listening?.micMuted;
  const running = typeof live === 'boolean';
  const stored = readMicMuted(file);
  // readMicMuted says why only in words: its message carries node's errno
  if (stored.problem && !running && /\b(EACCES|EPERM)\b/.test(stored.problem)) {
    return { name, status: 'warn', detail: `cannot read ${file}: permission denied`, fix: SUDO_FIX };
  }
  if (stored.problem && !(running && live)) {
    const when = running ? ' at the agent\'s next start' : '';
    return { name, status: 'warn', detail: `${stored.problem}: it counts as muted${when}`, fix: 'speaker-agent mic on   (writes the file anew)' };
  }
  if (running ? live : stored.muted) {
    return {
      name,
      status: 'warn',
      detail: `the microphone is muted (${running ? 'the running agent' : file}): the speaker hears neither the wake word nor anyone`,
      fix: 'speaker-agent mic on',
    };
  }
  return { name, status: 'pass', detail: `not muted (${running ? 'the running agent' : file})` };
}

function addon(name: string, id: string, load: () => unknown, probe: (m: unknown) => string): Omit<CheckResult, 'ms'> {
  try {
    return { name, status: 'pass', detail: `${id}: ${probe(load())}` };
  } catch (err) {
    return { name, status: 'fail', detail: `${id} does not load: ${(err as Error).message.split('\n')[0]}`, fix: rebuildAdvice(), category: 'audio' };
  }
}

/** The call's audio is decoded by Debian's libopus (libopusDecoder.ts), which setup.sh and install.sh install. A
 *  speaker updated with `git pull` alone, on a board without ffmpeg, lacks it: every call would fail and be retried. */
function checkLibopus(): Omit<CheckResult, 'ms'> {
  const name = 'library: libopus';
  try {
    const version = libopusVersion();
    const dec = new LibopusDecoder(SAMPLE_RATE, CHANNELS);
    try {
      // a concealed (lost) frame: the whole decode path through the library, no packet needed
      const n = dec.decode(null, new Int16Array(FRAME_SAMPLES * CHANNELS), FRAME_SAMPLES);
      return { name, status: 'pass', detail: `${version}: decodes a 20 ms frame to ${n} samples` };
    } finally {
      dec.close();
    }
  } catch (err) {
    return {
      name,
      status: 'fail',
      detail: (err as Error).message,
      fix: `sudo apt install ${process.arch === 'arm' ? 'libopus0:armhf' : 'libopus0'}   (scripts/install.sh installs it; a speaker updated with \`git pull\` alone may lack it)`,
      category: 'audio',
    };
  }
}

function busyBecauseOfDaemon(err: unknown, daemon: string | undefined): boolean {
  return Boolean(daemon) && /busy|unavailable/i.test(String((err as Error).message));
}

async function checkCapture(backend: AudioBackend | undefined, device: string, ms: number, daemon: string | undefined): Promise<Omit<CheckResult, 'ms'>> {
  if (!backend) return { name: 'capture', status: 'skip', detail: 'the audio addon does not load' };
  const fix = 'speaker-agent devices   (then set audio.captureDevice in config.json or SPEAKER_AGENT_CAPTURE_DEVICE)';
  let frames = 0;
  let sum = 0;
  let samples = 0;
  try {
    const cap = backend.openCapture(device);
    let failure: Error | undefined;
    cap.onError = (e) => (failure = e);
    let first: (() => void) | undefined;
    const flowing = new Promise<void>((r) => (first = r));
    await cap.start((f) => {
      frames++;
      for (let i = 0; i < f.length; i++) sum += f[i] * f[i];
      samples += f.length;
      first?.();
    });
    // Sound servers take up to ~1 s before audio flows on a new stream: measure from the first frame.
    const started = await Promise.race([flowing.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 2500))]);
    if (started) await new Promise((r) => setTimeout(r, ms));
    await cap.stop();
    if (failure) throw failure;
  } catch (err) {
    if (busyBecauseOfDaemon(err, daemon)) return { name: 'capture', status: 'pass', detail: `${device}: in use by the running agent` };
    return { name: 'capture', status: 'fail', detail: (err as Error).message, fix, category: 'audio' };
  }
  if (frames === 0) return { name: 'capture', status: 'fail', detail: `${device} opened but delivered no audio in 2.5 s`, fix, category: 'audio' };
  const rms = Math.sqrt(sum / samples);
  const db = rms > 0 ? 20 * Math.log10(rms / 32768) : -Infinity;
  if (db < DIGITAL_SILENCE_DBFS) {
    return {
      name: 'capture',
      status: 'fail',
      detail: `${device} delivers digital silence (${Number.isFinite(db) ? db.toFixed(1) : '-inf'} dBFS over ${frames} frames)`,
      fix: 'is a microphone connected, and its capture switch on and level up? (alsamixer -V capture)',
      category: 'audio',
    };
  }
  return { name: 'capture', status: 'pass', detail: `${device}: ${frames} frames, level ${db.toFixed(1)} dBFS` };
}

async function checkPlayback(backend: AudioBackend | undefined, device: string, daemon: string | undefined): Promise<Omit<CheckResult, 'ms'>> {
  if (!backend) return { name: 'playback', status: 'skip', detail: 'the audio addon does not load' };
  try {
    const pb = backend.openPlayback(device);
    let failure: Error | undefined;
    pb.onError = (e) => (failure = e);
    await pb.start();
    const silence = new Int16Array(FRAME_SAMPLES);
    for (let i = 0; i < 5; i++) {
      pb.write(silence);
      await new Promise((r) => setTimeout(r, 20));
    }
    await pb.stop();
    if (failure) throw failure;
  } catch (err) {
    if (busyBecauseOfDaemon(err, daemon)) return { name: 'playback', status: 'pass', detail: `${device}: in use by the running agent` };
    return {
      name: 'playback',
      status: 'fail',
      detail: (err as Error).message,
      fix: 'speaker-agent devices   (then set audio.playbackDevice in config.json or SPEAKER_AGENT_PLAYBACK_DEVICE)',
      category: 'audio',
    };
  }
  return { name: 'playback', status: 'pass', detail: `${device}: opened, 100 ms of silence played` };
}

async function checkMixer(loaded: LoadedSettings): Promise<Omit<CheckResult, 'ms'>> {
  const mixer = await openMixer(loaded.settings);
  try {
    const before = await mixer.get();
    // set a different level, read it back, restore: proves the control is writable, not just readable
    const probe = before.volumePercent >= 50 ? before.volumePercent - 7 : before.volumePercent + 7;
    const during = await mixer.setVolume(probe);
    const after = await mixer.setVolume(before.volumePercent);
    if (Math.abs(during.volumePercent - probe) > 3) {
      return {
        name: 'mixer',
        status: 'fail',
        detail: `${mixer.description}: set ${probe}%, read back ${during.volumePercent}%`,
        fix: 'choose another control: set mixer.control (amixer -c CARD scontrols lists them)',
        category: 'audio',
      };
    }
    return { name: 'mixer', status: 'pass', detail: `${mixer.description}: writable (set ${probe}%, restored ${after.volumePercent}%${before.muted ? ', muted' : ''})` };
  } catch (err) {
    let controls = '';
    if (err instanceof MixerError && err.code === 'control_not_found') {
      controls = await mixer
        .listControls()
        .then((cs) => cs.filter((c) => c.hasPlaybackVolume).map((c) => c.name).join(', '))
        .catch(() => '');
    }
    return {
      name: 'mixer',
      status: 'fail',
      detail: (err as Error).message,
      fix: controls
        ? `set mixer.control to one of: ${controls}   (config.json or SPEAKER_AGENT_MIXER_CONTROL)`
        : 'check mixer.card (aplay -l lists cards) and mixer.control (amixer -c CARD scontrols)',
      category: 'audio',
    };
  }
}

async function checkReachable(url: string, timeoutMs: number): Promise<{ result: Omit<CheckResult, 'ms'>; date: string | null; clockCode?: string }> {
  try {
    const res = await fetch(url, { method: 'GET', signal: AbortSignal.timeout(Math.min(timeoutMs, 4000)) });
    await res.arrayBuffer().catch(() => undefined);
    return { result: { name: 'server reachable', status: 'pass', detail: `${url} answers (HTTP ${res.status})` }, date: res.headers.get('date') };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    // The certificate refused for this machine's time: the fix is the clock, not the network (checkClock says so)
    const clockCode = certificateClockCode(err);
    if (clockCode) {
      // expired: a clock run ahead, or a certificate that really lapsed (a failed renewal) with the clock right
      const fix = clockCode === 'CERT_HAS_EXPIRED' ? `if this machine's time is wrong: ${CLOCK_FIX}; if it is right, the server's certificate has expired: renew it on the server` : CLOCK_FIX;
      return { result: { name: 'server reachable', status: 'fail', detail: `${url}: ${certificateClockProblem(err)}`, fix, category: 'other' }, date: null, clockCode };
    }
    // a certificate from a CA node does not trust (a server with its own CA): the fix is to give node the CA
    const trustCode = certificateTrustCode(err);
    if (trustCode) {
      const detail = `${url}: ${certificateTrustSummary(trustCode)}`;
      return { result: { name: 'server reachable', status: 'fail', detail, fix: certificateTrustFix(), category: 'config' }, date: null };
    }
    return {
      result: {
        name: 'server reachable',
        status: 'fail',
        detail: `${url}: ${e.name === 'TimeoutError' ? 'no answer' : (e.cause?.code ?? e.message)}`,
        fix: 'is the server URL right (server.url) and the server up? check the network (ping, DNS, firewall)',
        category: 'network',
      },
      date: null,
    };
  }
}

const CLOCK_FIX = 'enable time sync: timedatectl set-ntp true (NTP needs UDP port 123 open to the internet); timedatectl shows whether it synced';

function checkClock(serverDate: string | null, certificateClockCode?: string): Omit<CheckResult, 'ms'> {
  const now = Date.now();
  if (new Date(now).getUTCFullYear() < 2024) {
    return { name: 'clock', status: 'fail', detail: `system time ${new Date(now).toISOString()} is in the past`, fix: CLOCK_FIX, category: 'other' };
  }
  // fake-hwclock's time after months unplugged passes the year check; the server's certificate tells
  if (certificateClockCode === 'CERT_NOT_YET_VALID') {
    return { name: 'clock', status: 'fail', detail: `system time ${new Date(now).toISOString()}: the server's certificate is not yet valid by it`, fix: CLOCK_FIX, category: 'other' };
  }
  if (certificateClockCode) {
    // an expired certificate says less of the clock: a warning, with the time to compare
    return { name: 'clock', status: 'warn', detail: `system time ${new Date(now).toISOString()}: the server's certificate is expired by it (is this time right?)`, fix: CLOCK_FIX };
  }
  const server = serverDate ? Date.parse(serverDate) : NaN;
  if (!Number.isFinite(server)) return { name: 'clock', status: 'pass', detail: `${new Date(now).toISOString()} (server sent no Date to compare)` };
  const skew = Math.round((now - server) / 1000);
  if (Math.abs(skew) > 60) {
    return {
      name: 'clock',
      status: 'fail',
      detail: `${skew > 0 ? 'ahead of' : 'behind'} the server by ${Math.abs(skew)} s (TLS and signed URLs need a correct clock)`,
      fix: CLOCK_FIX,
      category: 'other',
    };
  }
  return { name: 'clock', status: 'pass', detail: `within ${Math.abs(skew)} s of the server` };
}

async function checkAuth(client: ServiceClient, clientId: string): Promise<Omit<CheckResult, 'ms'>> {
  try {
    const r = await client.requestApp('GET', '/v1/app/voices');
    const n = (r.json as { voices?: unknown[] } | undefined)?.voices?.length ?? 0;
    return { name: 'device headers (TOFU)', status: 'pass', detail: `accepted: this device's secret is the enrolled one (${n} voices visible)` };
  } catch (err) {
    const e = err instanceof AgentError ? err : new AgentError('internal', String(err));
    if (e.code === 'auth_rejected') {
      return {
        name: 'device headers (TOFU)',
        status: 'fail',
        detail: e.message,
        fix: rejectionAdvice(e, clientId).fix, // by the server's code: a wrong key and a lost secret need opposite fixes
        category: 'auth',
      };
    }
    return { name: 'device headers (TOFU)', status: 'fail', detail: e.message, fix: 'see the server logs', category: e.code === 'network' ? 'network' : 'other' };
  }
}

async function checkCall(client: ServiceClient, loaded: LoadedSettings): Promise<Omit<CheckResult, 'ms'>> {
  const s = loaded.settings;
  const call = new Call({
    client,
    transport: (await transportFactory(s))(),
    mixer: await openMixer(s),
    logger: silentLogger,
    hooks: { onAudio: () => {}, onTranscript: () => {}, onFunction: () => {} },
    livenessTimeoutMs: s.call.livenessTimeoutMs,
    connectTimeoutMs: Math.min(s.call.connectTimeoutMs, 8000),
  });
  const t0 = performance.now();
  try {
    await call.connect();
    const ms = Math.round(performance.now() - t0);
    return { name: 'realtime call', status: 'pass', detail: `session ${call.sessionId}: ICE + DTLS + data channel up in ${ms} ms` };
  } catch (err) {
    const e = err instanceof AgentError ? err : new AgentError('call_failed', String(err));
    return {
      name: 'realtime call',
      status: 'fail',
      detail: e.message,
      fix:
        e.code === 'auth_rejected'
          ? 'the server rejects this device for calls: see the TOFU fix above'
          : 'ICE failed: UDP to the server blocked? behind NAT without a TURN server in the session\'s iceServers?',
      category: e.code === 'auth_rejected' ? 'auth' : 'network',
    };
  } finally {
    await call.close();
  }
}

// The Mixer on ALSA's `amixer` (alsa-utils): present on every Pi OS / Debian image, works for onboard, HDMI and
// USB cards and through PulseAudio/PipeWire's ALSA plugin.
//
// Why not the `loudness` package (the first choice): it uses the FIRST simple control of the DEFAULT card
// and caches it, with no way to choose card or control (a Pi's onboard audio exposes `PCM`, not `Master`;
// since 2020 Pi OS splits HDMI and headphones into separate cards; USB cards expose `Speaker`), and its parser
// requires an [on]/[off] switch, so it fails on controls without one. That is the "volume does nothing" bug.
//
// Percent scale: we use amixer's -M ("mapped") volume for both set and get. On cards with a dB range (Pi PCM
// is -102.4..+4 dB) plain percent is linear in raw steps, so "40 %" would be about -60 dB, barely audible;
// mapped percent follows loudness like alsamixer does, and where the card has no dB information (the
// PulseAudio plugin, some USB cards) it equals plain percent. Set and read use the same scale, so 40 reads
// back as 40 (on a card with very coarse steps the nearest step is reported: the level truly in force).
//
// Calls are serialized (a set and its read-back must not interleave with another set) and run with execFile
// (no shell) and LC_ALL=C so the output format is stable.
import { execFile, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { MixerError, type Mixer, type MixerState } from './mixer.js';

export interface AmixerMixerOptions {
  /** Card index, card name (e.g. "Headphones", "Device") or "default" (ALSA's default device). Default "default". */
  card?: string | number;
  /** Simple control name, e.g. "PCM", "Speaker", "Master". Default: chosen automatically (see chooseControl). */
  control?: string;
  /** amixer binary; default "amixer" on PATH. */
  amixerPath?: string;
  timeoutMs?: number;
}

/** Controls tried in order when none is configured; then the first control with a playback volume. */
export const PREFERRED_CONTROLS = ['Master', 'PCM', 'Speaker', 'Headphone', 'Digital'];

export interface ParsedControl {
  name: string;
  index: number;
  capabilities: string[];
  hasPlaybackVolume: boolean;
  hasPlaybackSwitch: boolean;
  channels: { name: string; percent: number; db?: number; on?: boolean }[];
}

export class AmixerMixer implements Mixer {
  private readonly cardArgs: string[];
  private readonly cardLabel: string;
  private readonly amixer: string;
  private readonly timeoutMs: number;
  /** an amixer killed at its timeout that has not ended yet (stuck in the card's driver) */
  private stuck: ChildProcess | undefined;
  /** the configured control: never replaced */
  private readonly control: string | undefined;
  /** the automatic choice, forgotten when the card no longer has it (another card now behind mixer.card) */
  private chosen: Promise<string> | undefined;
  private chosenName: string | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  /** Mute emulation for controls without a switch: the level to restore on unmute. */
  private emulatedMuteRestore: number | undefined;
  private cardName: string | undefined;
  /** mixer.card "default" only: why ALSA's default control is a sound server's that does not answer this user
   *  (alsa-lib's line), while the first card's own mixer (sysdefault) is used instead; see run() */
  private serverDown: string | undefined;

  constructor(opts: AmixerMixerOptions = {}) {
    const card = opts.card ?? 'default';
    if (typeof card === 'number' && !(Number.isInteger(card) && card >= 0)) {
      throw new MixerError('mixer_not_found', `mixer card must be a card index >= 0, a card name or "default", got ${card}`);
    }
    const c = String(card).trim();
    if (c === '') throw new MixerError('mixer_not_found', 'mixer card must not be empty (use "default")');
    this.cardArgs = c === 'default' ? ['-D', 'default'] : ['-c', c];
    this.cardLabel = c === 'default' ? 'default' : c;
    this.control = opts.control?.trim() || undefined;
    this.amixer = opts.amixerPath ?? 'amixer';
    this.timeoutMs = opts.timeoutMs ?? 5000;
  }

  get description(): string {
    const card = /^\d+$/.test(this.cardLabel) && this.cardName
      ? `card ${this.cardLabel} (${this.cardName})`
      : this.serverDown
        ? "card sysdefault (ALSA's default sound server does not answer this user)"
        : `card ${this.cardLabel}`;
    return `${card}, control ${this.control ?? this.chosenName ?? '(automatic)'}`;
  }

  /** the card the last amixer call reached: sysdefault while ALSA's default sound server does not answer (run()) */
  private get cardInUse(): string {
    return this.serverDown ? 'sysdefault' : this.cardLabel;
  }

  /** Lists the card's simple controls with their capabilities. */
  async listControls(): Promise<ParsedControl[]> {
    const out = await this.run(['scontents']);
    return parseScontents(out);
  }

  get(): Promise<MixerState> {
    return this.serial(() => this.onControl((control) => this.read(control)));
  }

  setVolume(percent: number): Promise<MixerState> {
    return this.serial(async () => {
      if (typeof percent !== 'number' || !Number.isFinite(percent)) {
        throw new MixerError('mixer_failed', `volume must be a number between 0 and 100, got ${String(percent)}`);
      }
      const p = Math.round(Math.min(100, Math.max(0, percent)));
      return this.onControl(async (control) => {
        await this.runOnControl(['-M', 'sset', control, `${p}%`]);
        if (p > 0) this.emulatedMuteRestore = undefined;
        return this.read(control);
      });
    });
  }

  setMuted(muted: boolean): Promise<MixerState> {
    return this.serial(() =>
      this.onControl(async (control) => {
        const parsed = await this.sget(control);
        if (parsed.hasPlaybackSwitch) {
          await this.run(['sset', control, muted ? 'mute' : 'unmute']);
        } else if (muted) {
          // No switch on this control (common on USB cards): mute means volume 0; remember the level.
          const level = averagePercent(parsed);
          if (level > 0) this.emulatedMuteRestore = level;
          await this.run(['-M', 'sset', control, '0%']);
        } else if (this.emulatedMuteRestore !== undefined) {
          await this.run(['-M', 'sset', control, `${this.emulatedMuteRestore}%`]);
          this.emulatedMuteRestore = undefined;
        }
        return this.read(control);
      }),
    );
  }

  private async read(control: string): Promise<MixerState> {
    const parsed = await this.sget(control);
    const volumePercent = averagePercent(parsed);
    const muted = parsed.hasPlaybackSwitch
      ? parsed.channels.length > 0 && parsed.channels.every((ch) => ch.on === false)
      : this.emulatedMuteRestore !== undefined && volumePercent === 0;
    return { volumePercent, muted };
  }

  private async sget(control: string): Promise<ParsedControl> {
    const out = await this.runOnControl(['-M', 'sget', control]);
    const parsed = parseScontents(out)[0];
    if (!parsed || !parsed.hasPlaybackVolume || parsed.channels.length === 0) {
      throw new MixerError('control_not_found', `mixer control ${JSON.stringify(control)} on card ${this.cardInUse} has no playback volume`);
    }
    return parsed;
  }

  /** Runs fn on the control. An automatic choice the card no longer has is forgotten, so the next call chooses
   *  again: the card behind mixer.card may have changed (another USB speaker plugged in) while the agent runs. */
  private async onControl<T>(fn: (control: string) => Promise<T>): Promise<T> {
    const control = await this.controlName();
    try {
      return await fn(control);
    } catch (err) {
      if (!this.control && err instanceof MixerError && (err.code === 'control_not_found' || err.code === 'mixer_not_found')) {
        this.chosen = undefined;
        this.chosenName = undefined;
      }
      throw err;
    }
  }

  private controlName(): Promise<string> {
    if (this.control) return Promise.resolve(this.control);
    this.chosen ??= this.chooseControl().then(
      (name) => {
        this.chosenName = name;
        return name;
      },
      (err: unknown) => {
        this.chosen = undefined; // try again next time (the card may appear later)
        throw err;
      },
    );
    return this.chosen;
  }

  private async chooseControl(): Promise<string> {
    const controls = await this.listControls();
    const name = chooseControl(controls);
    if (!name) {
      const names = controls.map((c) => c.name).join(', ') || 'none';
      throw new MixerError('control_not_found', `card ${this.cardInUse} has no control with a playback volume (controls: ${names})`);
    }
    if (/^\d+$/.test(this.cardLabel)) this.cardName = await readCardName(Number(this.cardLabel));
    return name;
  }

  /** run() for a command naming a control: a missing control's error lists the controls there are. */
  private async runOnControl(args: string[]): Promise<string> {
    try {
      return await this.run(args);
    } catch (err) {
      if (err instanceof MixerError && err.code === 'control_not_found') {
        // One log line then shows the configuration mistake and its fix.
        const names = await this.listControls().then(
          (cs) => cs.filter((c) => c.hasPlaybackVolume).map((c) => c.name).join(', ') || 'none',
          () => 'unknown',
        );
        throw new MixerError('control_not_found', `${err.message}; controls with a playback volume: ${names}`, err.cause);
      }
      throw err;
    }
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /**
   * Runs amixer on the card. With mixer.card "default", when ALSA's default control is a sound server's plugin
   * whose server does not answer this user, the first card's own mixer (ALSA's `sysdefault`) is used instead, as
   * the agent's playback stream uses it when `default` does not open (resolveDevice). That is the Raspberry Pi OS
   * desktop image: pipewire-alsa makes PipeWire ALSA's default for every user, but the server runs in the desktop
   * user's session, which the service's user cannot reach, so every volume call failed. (Debian's PulseAudio
   * plugin makes itself the default only for a user who can reach its server: 99-pulse.conf's hook.)
   * `default` is asked first on every call, as the streams ask on every open: a server that was down only for a
   * moment (restarted, or not yet up at boot) takes the volume back, not card 0 for the rest of the run.
   */
  private async run(args: string[]): Promise<string> {
    if (this.cardLabel !== 'default') return this.amixerRun(this.cardArgs, args, this.cardLabel);
    let down: string;
    try {
      const out = await this.amixerRun(this.cardArgs, args, 'default');
      this.serverDown = undefined;
      return out;
    } catch (err) {
      const why = soundServerDown(err);
      if (why === undefined) throw err;
      down = why;
    }
    try {
      const out = await this.amixerRun(['-D', 'sysdefault'], args, 'sysdefault');
      this.serverDown = down;
      return out;
    } catch (err) {
      if (!(err instanceof MixerError) || err.code !== 'mixer_not_found') throw err; // a control, a timeout: not the card
      this.serverDown = undefined;
      const stderr = (err as { stderr?: unknown }).stderr;
      throw new MixerError(
        'mixer_not_found',
        `sound card default: ALSA's default control is a sound server's that does not answer this user (${down}), and the first card's own mixer (sysdefault) failed too: ${typeof stderr === 'string' && stderr.trim() ? firstLine(stderr.trim()) : err.message}`,
        err,
      );
    }
  }

  /** amixer with these card arguments; `card` names the card in errors */
  private amixerRun(cardArgs: string[], args: string[], card: string): Promise<string> {
    if (this.stuck) {
      // each call would leave one more process (and two descriptors) behind it
      return Promise.reject(new MixerError('mixer_failed', `amixer of an earlier call is still stuck (pid ${this.stuck.pid}): the card's driver does not answer`));
    }
    return new Promise((resolve, reject) => {
      const child = execFile(
        this.amixer,
        [...cardArgs, ...args],
        { env: { ...process.env, LC_ALL: 'C' }, timeout: this.timeoutMs, killSignal: 'SIGKILL', encoding: 'utf8' },
        (err, stdout, stderr) => {
          clearTimeout(stuckTimer);
          if (!err) return resolve(stdout);
          const e = this.classify(err, String(stderr ?? ''), args, card);
          (e as { stderr?: string }).stderr = String(stderr ?? '');
          reject(e);
        },
      );
      // execFile answers once amixer has ended: one stuck in a wedged USB card's driver, which not even SIGKILL
      // ends until the driver lets it, would hold every later volume command behind this one (not testable here)
      const stuckTimer = setTimeout(() => {
        this.stuck = child;
        child.once('exit', () => {
          if (this.stuck === child) this.stuck = undefined;
        });
        reject(new MixerError('mixer_failed', `amixer did not end within ${this.timeoutMs + 1000} ms, even killed: the card's driver does not answer`));
      }, this.timeoutMs + 1000);
    });
  }

  private classify(err: Error & { code?: string | number | null; killed?: boolean }, stderr: string, args: string[], card: string): Error {
    const text = stderr.trim() || err.message;
    if (err.code === 'ENOENT') {
      return new MixerError('mixer_failed', `${this.amixer} not found: install alsa-utils`, err);
    }
    if (/Unable to find simple control/i.test(text)) {
      const control = args.find((a, i) => args[i - 1] === 'sget' || args[i - 1] === 'sset') ?? '?';
      return new MixerError('control_not_found', `mixer control ${JSON.stringify(control)} not found on card ${card}`, err);
    }
    if (/Invalid card|cannot find card|No such file|Mixer attach|Mixer load|No such device|control open/i.test(text)) {
      return new MixerError('mixer_not_found', `sound card ${card} not found or has no mixer: ${firstLine(text)}`, err);
    }
    if (err.killed) return new MixerError('mixer_failed', `amixer did not answer within ${this.timeoutMs} ms`, err);
    return new MixerError('mixer_failed', `amixer ${args.join(' ')} failed: ${firstLine(text)}`, err);
  }
}

/** The line saying so when ALSA's default control is a sound server's plugin (PulseAudio's, PipeWire's) that could
 *  not connect to its server: a socket refused, or none there (PipeWire's EHOSTDOWN: amixer's "Mixer attach
 *  default error: Host is down"). Only a plugin that talks to a server fails on `default` that way; a card fails
 *  with "cannot find card". (The matching line, not the first: PipeWire may log a line of its own before it.) */
function soundServerDown(err: unknown): string | undefined {
  const stderr = (err as { stderr?: unknown }).stderr;
  if (!(err instanceof MixerError) || typeof stderr !== 'string') return undefined;
  const lines = stderr.split('\n').map((l) => l.trim());
  const line = lines.find((l) => /Connection refused|Host is down/i.test(l)) ?? lines.find((l) => /(pulse|pipewire)\S*:.*Unable to connect/i.test(l));
  return line?.slice(0, 300);
}

function firstLine(s: string): string {
  return s.split('\n')[0].slice(0, 300);
}

async function readCardName(index: number): Promise<string | undefined> {
  try {
    const cards = await readFile('/proc/asound/cards', 'utf8');
    const m = new RegExp(`^\\s*${index}\\s+\\[(\\S+)\\s*\\]`, 'm').exec(cards);
    return m?.[1];
  } catch {
    return undefined;
  }
}

/** The automatic choice: first preferred name present with a playback volume, else the first with one. */
export function chooseControl(controls: ParsedControl[]): string | undefined {
  const usable = controls.filter((c) => c.hasPlaybackVolume);
  for (const want of PREFERRED_CONTROLS) {
    const hit = usable.find((c) => c.name === want && c.index === 0);
    if (hit) return hit.name;
  }
  return usable[0]?.name;
}

function averagePercent(c: ParsedControl): number {
  if (c.channels.length === 0) return 0;
  return Math.round(c.channels.reduce((s, ch) => s + ch.percent, 0) / c.channels.length);
}

/**
 * Parses `amixer sget X` / `amixer scontents` output: one block per "Simple mixer control 'Name',idx".
 * Handles mono and stereo, with and without [on]/[off] switches and dB values, playback and common ("volume")
 * capabilities; capture-only lines are ignored.
 */
export function parseScontents(text: string): ParsedControl[] {
  const controls: ParsedControl[] = [];
  let cur: ParsedControl | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    const head = /^Simple mixer control '(.*)',(\d+)$/.exec(line);
    if (head) {
      cur = { name: head[1], index: Number(head[2]), capabilities: [], hasPlaybackVolume: false, hasPlaybackSwitch: false, channels: [] };
      controls.push(cur);
      continue;
    }
    if (!cur) continue;
    const caps = /^\s+Capabilities:\s*(.*)$/.exec(line);
    if (caps) {
      cur.capabilities = caps[1].split(/\s+/).filter(Boolean);
      cur.hasPlaybackVolume = cur.capabilities.some((c) => c === 'pvolume' || c === 'volume');
      cur.hasPlaybackSwitch = cur.capabilities.some((c) => c === 'pswitch' || c === 'switch');
      continue;
    }
    // "  Front Left: Playback 26214 [40%] [-20.00dB] [on]"  /  "  Mono: Playback 37 [100%] [0.00dB]"
    // Common-volume controls print "  Mono: 31 [100%] [on]" (no "Playback" word).
    const ch = /^\s+([A-Za-z][A-Za-z ]*?):\s+(Playback\s+|Capture\s+)?(-?\d+)\s+\[(\d+)%\](.*)$/.exec(line);
    if (ch) {
      if (ch[2]?.startsWith('Capture')) continue;
      if (!ch[2] && !cur.capabilities.includes('volume')) continue;
      const rest = ch[5];
      const db = /\[(-?\d+(?:\.\d+)?)dB\]/.exec(rest);
      const sw = /\[(on|off)\]/.exec(rest);
      cur.channels.push({ name: ch[1], percent: Number(ch[4]), db: db ? Number(db[1]) : undefined, on: sw ? sw[1] === 'on' : undefined });
    }
  }
  return controls;
}

// The agent's view of a sound card: capture and playback of 20 ms mono s16 frames at 48 kHz.
// One small interface so the PortAudio specifics (and a board's quirks) live in portAudioBackend.ts only.
import { CodedError } from '../../common/errors.js';

export interface AudioDeviceInfo {
  id: number;
  name: string;
  maxInputChannels: number;
  maxOutputChannels: number;
  defaultSampleRate: number;
  hostApi: string;
}

/** Set by the consumer on a device: called once per stream, from its first audio callback, with the audio
 *  thread's real-time scheduling (PortAudioOptions.realtimePriority): 0 granted, else the errno (EPERM: no
 *  permission; the thread runs on at normal priority). Optional for implementations without such a thread. */
export type RealtimeReport = (errno: number) => void;

export interface CaptureDevice {
  /** Delivers 20 ms mono s16 frames (960 samples at 48 kHz) with the hrtime (ns) the audio callback delivered them.
   *  The frame buffer may be reused after the callback returns: copy it to keep it. */
  start(onFrame: (frame: Int16Array, capturedAtNs: bigint) => void): Promise<void>;
  stop(): Promise<void>;
  /** Called when the device fails after start (stream error, card unplugged). Optional for implementations. */
  onError?: (err: AudioDeviceError) => void;
  onRealtime?: RealtimeReport;
}

export interface PlaybackDevice {
  start(): Promise<void>;
  /** Non-blocking: queues a frame for the device. The frame is copied; the caller may reuse its buffer. */
  write(frame: Int16Array): void;
  /** ms of audio queued but not yet handed to ALSA */
  readonly queuedMs: number;
  stop(): Promise<void>;
  /** Called when the device fails after start (stream error, card unplugged). Optional for implementations. */
  onError?: (err: AudioDeviceError) => void;
  onRealtime?: RealtimeReport;
  /** Set by the consumer: called, in write order, when a frame has been handed to the audio system (leaves
   *  queuedMs). The downlink paces playout by it (the sound card's clock): implementations must call it. */
  onHanded?: (atNs: bigint) => void;
  /** Set by the consumer: called each time the device has (re)opened and takes frames. A reopened device has
   *  nothing queued, so it reports nothing handed until it is written to: the consumer fills it here. Optional
   *  for implementations that never reopen by themselves. */
  onReady?: () => void;
  /** Device periods that found less than a frame queued and played silence for it (the writer was late). */
  readonly underruns?: number;
  /** Set by the consumer: called, in order with onHanded, when the device has played ms of silence for want of
   *  frames, or found that the audio system below it did (PortAudio's DAC times: dacClock.ts). The silence came
   *  before the last queuedMs of what was written (frames written after it ran dry), which the echo canceller's
   *  reference therefore moves that much later (echoReference.ts noteStarved). */
  onStarved?: (ms: number, queuedMs: number) => void;
}

/** The sound card's xruns: the device ran dry (speaker) or over (microphone); each is a click, a gap or lost audio. */
export interface Xruns {
  underruns: number;
  overruns: number;
}

export interface AudioBackend {
  listDevices(): AudioDeviceInfo[];
  openCapture(deviceName: string): CaptureDevice;
  openPlayback(deviceName: string): PlaybackDevice;
  /** since the backend was made; null where it cannot count them */
  xruns?(): Xruns | null;
}

export type AudioDeviceErrorCode = 'device_busy' | 'device_missing' | 'device_failed';

export class AudioDeviceError extends CodedError<AudioDeviceErrorCode> {
  override name = 'AudioDeviceError';
  constructor(code: AudioDeviceErrorCode, message: string, cause?: unknown) {
    super(code, message, { cause });
  }
}

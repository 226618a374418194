// The device's output volume, behind one small interface: the board's quirks (which card, which control,
// switch or no switch) live in the implementation (amixerMixer.ts), not in the device functions.
import { CodedError } from '../../common/errors.js';

export interface MixerState {
  /** 0..100, read back from the mixer */
  volumePercent: number;
  muted: boolean;
}

export interface Mixer {
  /** e.g. "card 0 (Headphones), control PCM" */
  readonly description: string;
  get(): Promise<MixerState>;
  /** Sets all channels to percent (clamped 0..100) and returns the level now in force. */
  setVolume(percent: number): Promise<MixerState>;
  setMuted(muted: boolean): Promise<MixerState>;
}

export type MixerErrorCode = 'mixer_not_found' | 'control_not_found' | 'mixer_failed';

export class MixerError extends CodedError<MixerErrorCode> {
  override name = 'MixerError';
  constructor(code: MixerErrorCode, message: string, cause?: unknown) {
    super(code, message, { cause });
  }
}

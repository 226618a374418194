// Adapter for an external neural TTS server (voice cloning proper), configured by tts.http.baseUrl.
// Nothing like it is reachable here; the protocol is small so a wrapper around any neural TTS can speak it:
//   POST {baseUrl}/v1/profiles   {voice_id, name, language, reference_text?, reference_audio_wav_base64?,
//                                 voice_clone_prompt_path?, design_prompt?}            -> {profile_id}
//   POST {baseUrl}/v1/synthesize {text, language, profile_id? | voice_clone_prompt_path?, speed, stability}
//                                -> {audio_wav_base64 (PCM16 mono WAV), words: [{word, start_ms, end_ms}]}
// Bearer authentication with tts.http.apiKey when set. No URL -> ADAPTER_NOT_CONFIGURED; any failure of the
// profile call -> ADAPTER_SYNC_FAILED; of the synthesis call -> TTS_FAILED.
import { readFile } from 'node:fs/promises';
import { decodeWav } from '../../common/audio/wav.js';
import type { WordTiming } from '../speech/synthesizer.js';
import { TtsAdapterError, type AdapterSynthesisRequest, type AdapterSynthesisResult, type TtsAdapter, type TtsVoice } from './ttsAdapter.js';

export interface HttpAdapterConfig {
  baseUrl: string;
  apiKey?: string;
  timeoutMs: number;
}

export class HttpTtsAdapter implements TtsAdapter {
  readonly name = 'http';
  /** the server chooses its rate per response */
  readonly sampleRate = undefined;

  constructor(private readonly cfg: HttpAdapterConfig) {}

  private base(): string {
    const b = this.cfg.baseUrl.trim().replace(/\/+$/, '');
    if (!/^https?:\/\//.test(b)) {
      throw new TtsAdapterError('ADAPTER_NOT_CONFIGURED', 'the external TTS adapter has no URL (set tts.http.baseUrl / SPEAKER_AGENT_COMPANION_TTS_URL)');
    }
    return b;
  }

  private async post(path: string, body: unknown, signal?: AbortSignal): Promise<unknown> {
    const url = this.base() + path;
    const timeout = AbortSignal.timeout(this.cfg.timeoutMs);
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(this.cfg.apiKey ? { authorization: `Bearer ${this.cfg.apiKey}` } : {}),
      },
      body: JSON.stringify(body),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    const text = await res.text();
    // the server's own words reach the devices (ADAPTER_* detail.error): without our key, should it echo it
    if (!res.ok) throw new Error(`HTTP ${res.status} from ${path}: ${(this.cfg.apiKey ? text.split(this.cfg.apiKey).join('[key]') : text).slice(0, 200)}`);
    return JSON.parse(text) as unknown;
  }

  async syncProfile(voice: TtsVoice, signal?: AbortSignal): Promise<{ profileId: string }> {
    this.base();
    try {
      const audio = voice.referenceAudioPath ? (await readFile(voice.referenceAudioPath)).toString('base64') : undefined;
      const r = (await this.post(
        '/v1/profiles',
        {
          voice_id: voice.id,
          name: voice.name,
          language: voice.language,
          reference_text: voice.referenceText,
          reference_audio_wav_base64: audio,
          voice_clone_prompt_path: voice.voiceClonePromptPath,
          design_prompt: voice.designPrompt,
        },
        signal,
      )) as { profile_id?: unknown };
      if (typeof r?.profile_id !== 'string' || !r.profile_id) throw new Error('the response has no profile_id');
      return { profileId: r.profile_id };
    } catch (err) {
      if (err instanceof TtsAdapterError) throw err;
      throw new TtsAdapterError('ADAPTER_SYNC_FAILED', `the TTS adapter could not register the voice: ${(err as Error).message}`, { cause: err });
    }
  }

  async synthesizeWithTimestamps(req: AdapterSynthesisRequest): Promise<AdapterSynthesisResult> {
    this.base();
    // spec rule: a designed voice may pass its prompt path; a clone uses its profile id
    const ref = req.voice.adapterProfileId
      ? { profile_id: req.voice.adapterProfileId }
      : req.voice.voiceClonePromptPath
        ? { voice_clone_prompt_path: req.voice.voiceClonePromptPath }
        : undefined;
    if (!ref) throw new TtsAdapterError('ADAPTER_SYNC_FAILED', 'the voice has no profile registered with the TTS adapter');
    let r: { audio_wav_base64?: unknown; words?: unknown };
    try {
      r = (await this.post(
        '/v1/synthesize',
        { text: req.text, language: req.voice.language, speed: req.speed ?? 1, stability: req.stability ?? 0.5, ...ref },
        req.signal,
      )) as typeof r;
      if (typeof r?.audio_wav_base64 !== 'string' || !Array.isArray(r.words)) throw new Error('malformed synthesis response');
    } catch (err) {
      if (req.signal?.aborted) throw new TtsAdapterError('ABORTED', 'synthesis aborted', { cause: err });
      throw new TtsAdapterError('TTS_FAILED', `the TTS adapter failed to synthesise: ${(err as Error).message}`, { cause: err });
    }
    const { pcm, sampleRate, channels } = decodeWav(Buffer.from(r.audio_wav_base64, 'base64'));
    if (channels !== 1) throw new TtsAdapterError('TTS_FAILED', 'the TTS adapter returned non-mono audio');
    req.onAudio(pcm);
    const words = locateWords(req.text, r.words as Array<{ word?: unknown; start_ms?: unknown; end_ms?: unknown }>);
    return { words, samples: pcm.length, sampleRate, durationMs: (pcm.length * 1000) / sampleRate };
  }

  async close(): Promise<void> {}
}

/** Attaches text offsets to an external server's words by finding each in the text, in order. */
function locateWords(text: string, raw: Array<{ word?: unknown; start_ms?: unknown; end_ms?: unknown }>): WordTiming[] {
  const out: WordTiming[] = [];
  let cursor = 0;
  const lower = text.toLowerCase();
  for (const w of raw) {
    const word = String(w.word ?? '');
    const startMs = Number(w.start_ms);
    const endMs = Number(w.end_ms);
    if (!word || !Number.isFinite(startMs) || !Number.isFinite(endMs)) continue;
    const at = lower.indexOf(word.toLowerCase(), cursor);
    const textOffset = at >= 0 ? at : cursor;
    out.push({ word, startMs, endMs, textOffset, textLength: at >= 0 ? word.length : 0 });
    if (at >= 0) cursor = at + word.length;
  }
  return out;
}

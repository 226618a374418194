// Everything a route needs, built once per server: settings, database, device authentication, speech engines,
// audio storage, URL signing and the TTS adapter. Routes and the realtime plugin receive this, nothing global.
import path from 'node:path';
import type { Logger } from '../common/logger.js';
import { DeviceAuthenticator } from './auth/deviceAuth.js';
import { openDatabase, type Db } from './db/database.js';
import type { CompanionSettings } from './settings.js';
import type { Recognizer } from './speech/recognizer.js';
import type { Synthesizer } from './speech/synthesizer.js';
import { AudioStore } from './storage/audioStore.js';
import { loadOrCreateSigningKey } from './storage/signingKey.js';
import { UrlSigner } from './storage/urlSigner.js';
import { EspeakAdapter } from './tts/espeakAdapter.js';
import { HttpTtsAdapter } from './tts/httpAdapter.js';
import type { TtsAdapter } from './tts/ttsAdapter.js';

export interface SpeechEngines {
  synthesizer: Synthesizer;
  recognizer: Recognizer;
}

export interface CompanionContext {
  settings: CompanionSettings;
  db: Db;
  auth: DeviceAuthenticator;
  logger: Logger;
  speech: SpeechEngines;
  signer: UrlSigner;
  audio: AudioStore;
  tts: TtsAdapter;
  /** base URL devices reach the server at (settings.publicUrl, else the listening address) */
  publicUrl(): string;
}

/** The offline engines (espeak-ng synthesiser processes, pocketsphinx recogniser threads) from src/companion/speech.
 *  The recogniser keeps its language model's dictionary in `<dataDir>/pocketsphinx` between starts. */
export async function createSpeechEngines(settings: Partial<Pick<CompanionSettings, 'dataDir' | 'recognizer'>> = {}, logger?: Logger): Promise<SpeechEngines> {
  const { EspeakSynthesizer } = await import('./speech/espeakSynthesizer.js');
  const { ThreadedRecognizer } = await import('./speech/recognizerThreads.js');
  const cacheDir = settings.dataDir === undefined ? undefined : path.join(settings.dataDir, 'pocketsphinx');
  // no bulk synthesis worker kept while idle: a speaker's own companion mostly speaks replies (the realtime worker)
  return { synthesizer: new EspeakSynthesizer({ keepBulkWorkers: 0, logger }), recognizer: new ThreadedRecognizer({ ...settings.recognizer, cacheDir }) };
}

export function createTtsAdapter(settings: CompanionSettings, speech: SpeechEngines): TtsAdapter {
  return settings.tts.adapter === 'http'
    ? new HttpTtsAdapter({ baseUrl: settings.tts.http.baseUrl, apiKey: settings.tts.http.apiKey, timeoutMs: settings.tts.http.timeoutMs })
    : new EspeakAdapter(speech.synthesizer);
}

export interface CreatedContext {
  context: CompanionContext;
  /** the server calls this once it knows its port (port 0 = ephemeral); ignored when publicUrl is set */
  setListeningUrl(url: string): void;
}

export async function createCompanionContext(
  settings: CompanionSettings,
  opts: { logger: Logger; speech?: SpeechEngines },
): Promise<CreatedContext> {
  const db = openDatabase(settings.dataDir);
  try {
    const speech = opts.speech ?? (await createSpeechEngines(settings, opts.logger));
    let base = settings.publicUrl ?? `http://${settings.host}:${settings.port}`;
    const signer = new UrlSigner(loadOrCreateSigningKey(settings.dataDir), base, settings.signedUrlTtlSeconds);
    const ctx: CompanionContext = {
      settings,
      db,
      auth: new DeviceAuthenticator(db, { enrollment: settings.enrollment }),
      logger: opts.logger,
      speech,
      signer,
      audio: new AudioStore(settings.dataDir),
      tts: createTtsAdapter(settings, speech),
      publicUrl: () => base,
    };
    const setListeningUrl = (u: string): void => {
      if (settings.publicUrl) return;
      base = u;
      signer.setBaseUrl(u);
    };
    return { context: ctx, setListeningUrl };
  } catch (err) {
    db.close();
    throw err;
  }
}

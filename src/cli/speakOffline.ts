// A phrase spoken by the offline espeak-ng engine (one worker, closed after use), for the CLI's checks
// (test-speaker --phrase, doctor's wake word check).
export async function speakOffline(text: string): Promise<{ pcm: Int16Array; sampleRate: number }> {
  const { EspeakSynthesizer } = await import('../companion/speech/espeakSynthesizer.js');
  const synth = new EspeakSynthesizer({ bulkWorkers: 1, realtimeWorkers: 1 });
  const parts: Int16Array[] = [];
  try {
    await synth.synthesize(text, { language: 'en-us' }, { onAudio: (p) => parts.push(p.slice()) });
  } finally {
    await synth.close();
  }
  const pcm = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    pcm.set(p, off);
    off += p.length;
  }
  return { pcm, sampleRate: synth.sampleRate };
}

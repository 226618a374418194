import { describe, expect, it } from 'vitest';
import { COMPANION_ENV_OVERRIDES, CompanionSettingsError, loadCompanionSettings } from '../../src/companion/settings.js';

describe('loadCompanionSettings', () => {
  it("realtime.loopbackCandidates speaks the agent's words (auto, always, never) and still reads the old on/off", () => {
    const lb = (v: unknown) => loadCompanionSettings({ realtime: { loopbackCandidates: v } } as never, {}).realtime.loopbackCandidates;
    expect(loadCompanionSettings({}, {}).realtime.loopbackCandidates).toBe('auto');
    expect([lb('always'), lb('never'), lb('auto')]).toEqual(['always', 'never', 'auto']);
    expect([lb('on'), lb('off')]).toEqual(['always', 'never']);
    expect(() => lb('yes')).toThrow(CompanionSettingsError);
  });

  it('has the documented defaults', () => {
    const s = loadCompanionSettings({}, { HOME: '/home/x' });
    expect(s).toMatchObject({
      host: '127.0.0.1',
      port: 8787,
      signedUrlTtlSeconds: 300,
      maxUploadBytes: 20 * 1024 * 1024,
      enrollment: 'open',
      tts: { adapter: 'espeak' },
      realtime: { iceServers: [], transcriptFamily: 'ga', brain: { kind: 'rules' } },
    });
    expect(s.publicUrl).toBeUndefined();
    expect(loadCompanionSettings({}, { STATE_DIRECTORY: '/var/lib/sa:/other' }).dataDir).toBe('/var/lib/sa');
  });

  it('reads every documented environment variable; explicit overrides win', () => {
    const env = {
      SPEAKER_AGENT_COMPANION_HOST: '0.0.0.0',
      SPEAKER_AGENT_COMPANION_PORT: '9000',
      SPEAKER_AGENT_COMPANION_DATA_DIR: '/data',
      SPEAKER_AGENT_COMPANION_PUBLIC_URL: 'http://hub.local:9000',
      SPEAKER_AGENT_COMPANION_ENROLLMENT: 'closed',
      SPEAKER_AGENT_COMPANION_TTS_ADAPTER: 'http',
      SPEAKER_AGENT_COMPANION_TTS_URL: 'http://tts:5000',
      SPEAKER_AGENT_COMPANION_ICE_SERVERS: '[{"urls":["stun:stun.example:3478"]}]',
      SPEAKER_AGENT_COMPANION_MAX_CALLS: '2',
    };
    const s = loadCompanionSettings({}, env);
    expect(s).toMatchObject({
      host: '0.0.0.0',
      port: 9000,
      dataDir: '/data',
      publicUrl: 'http://hub.local:9000',
      enrollment: 'closed',
      tts: { adapter: 'http', http: { baseUrl: 'http://tts:5000' } },
      realtime: { iceServers: [{ urls: ['stun:stun.example:3478'], username: '', credential: '' }], maxCalls: 2 },
    });
    expect(loadCompanionSettings({ port: 0, tts: { http: { apiKey: 'k' } } }, env)).toMatchObject({ port: 0, tts: { adapter: 'http', http: { baseUrl: 'http://tts:5000', apiKey: 'k' } } });
    for (const o of COMPANION_ENV_OVERRIDES) expect(o.env).toMatch(/^SPEAKER_AGENT_/);
  });

  it('refuses invalid values with a message naming each bad key', () => {
    const bad = () => loadCompanionSettings({}, { SPEAKER_AGENT_COMPANION_PORT: '70000', SPEAKER_AGENT_COMPANION_ENROLLMENT: 'maybe' });
    expect(bad).toThrow(CompanionSettingsError);
    expect(bad).toThrow(/port[\s\S]*enrollment|enrollment[\s\S]*port/);
    expect(() => loadCompanionSettings({}, { SPEAKER_AGENT_COMPANION_ICE_SERVERS: '[{' })).toThrow(/not valid JSON/);
  });
});

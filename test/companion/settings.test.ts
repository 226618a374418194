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
      recognizer: { threads: 2, keepThreads: 1, idleStopMs: 60_000 },
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
      SPEAKER_AGENT_COMPANION_RECOGNIZER_THREADS: '4',
      SPEAKER_AGENT_COMPANION_RECOGNIZER_KEEP_THREADS: '2',
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
      recognizer: { threads: 4, keepThreads: 2, idleStopMs: 60_000 },
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

  it('regression: a TURN credential left unquoted was quoted in the error; now its place only', () => {
    const ice = '[{"urls":["turn:turn.example:3478"],"username":"u","credential": s3cr3t-turn-pass}]';
    expect(() => loadCompanionSettings({}, { SPEAKER_AGENT_COMPANION_ICE_SERVERS: ice })).toThrow(
      'SPEAKER_AGENT_COMPANION_ICE_SERVERS: not valid JSON: unexpected character at line 1, column 66',
    );
    expect(() => loadCompanionSettings({}, { SPEAKER_AGENT_COMPANION_ICE_SERVERS: ice })).not.toThrow(/s3cr3t/);
  });

  it('regression: a user name or password in a service URL reached errors sent to devices; such URLs are refused', () => {
    for (const [env, key] of [
      ['SPEAKER_AGENT_COMPANION_TTS_URL', 'tts.http.baseUrl'],
      ['SPEAKER_AGENT_COMPANION_UPSTREAM_URL', 'realtime.upstream.url'],
      ['SPEAKER_AGENT_COMPANION_BRAIN_URL', 'realtime.brain.baseUrl'],
    ]) {
      const bad = () => loadCompanionSettings({}, { [env]: 'https://user:s3cr3t-tok@tts.example:5000' });
      expect(bad, env).toThrow(new RegExp(`${key.replace(/\./g, '\\.')}: a user name or password in the URL`));
      expect(bad, env).not.toThrow(/s3cr3t/);
      expect(() => loadCompanionSettings({}, { [env]: 'https://tts.example:5000' }), env).not.toThrow();
    }
  });

  it('regression: null or true for a number was read as 0 or 1; only the variables\' text is converted', () => {
    expect(() => loadCompanionSettings({ port: null } as never, {})).toThrow(/port: .*expected number/);
    expect(() => loadCompanionSettings({ realtime: { maxCalls: true } } as never, {})).toThrow(/realtime\.maxCalls: .*expected number/);
    expect(loadCompanionSettings({}, { SPEAKER_AGENT_COMPANION_MAX_CALLS: '3' }).realtime.maxCalls).toBe(3);
  });
});

import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentError } from '../../src/agent/errors.js';
import { openConfigStore } from '../../src/agent/configStore.js';
import { ENV_OVERRIDES, isLoopbackUrl, loadSettings, requireServerSettings } from '../../src/agent/settings.js';

const tmp = () => mkdtemp(path.join(os.tmpdir(), 'settings-'));

describe('settings', () => {
  it('defaults without a file; systemd and home directories', async () => {
    const dir = await tmp();
    const r = loadSettings({ configDir: dir, env: { STATE_DIRECTORY: '/var/lib/speaker-agent' } });
    expect(r.settings.audio.captureDevice).toBe('default');
    expect(r.settings.audio.duplex).toBe('auto');
    expect(r.settings.mixer.card).toBe('default');
    expect(r.settings.mixer.control).toBeUndefined();
    expect(r.settings.call.livenessTimeoutMs).toBe(5000);
    expect(r.stateDir).toBe('/var/lib/speaker-agent');
    expect(loadSettings({ configDir: dir, env: {} }).stateDir).toBe(path.join(os.homedir(), '.local/state/speaker-agent'));
    expect(() => requireServerSettings(r.settings)).toThrow(/workspace key/);
  });

  it('reads config.json and lets environment variables override it', async () => {
    const dir = await tmp();
    await writeFile(
      path.join(dir, 'config.json'),
      JSON.stringify({ server: { url: 'https://voice.example.com', workspaceKey: 'file-key' }, mixer: { control: 'PCM' } }),
    );
    const r = loadSettings({
      configDir: dir,
      env: { SPEAKER_AGENT_WORKSPACE_KEY: 'env-key', SPEAKER_AGENT_LIVENESS_TIMEOUT_MS: '3000', SPEAKER_AGENT_STATE_DIR: '/tmp/st' },
    });
    expect(r.settings.server.url).toBe('https://voice.example.com');
    expect(r.settings.server.workspaceKey).toBe('env-key');
    expect(r.settings.mixer.control).toBe('PCM');
    expect(r.settings.call.livenessTimeoutMs).toBe(3000);
    expect(r.stateDir).toBe('/tmp/st');
  });

  it('a corrupt config file is a clear config_invalid error and is left as it was', async () => {
    const dir = await tmp();
    await writeFile(path.join(dir, 'config.json'), '{"server": {"url": ');
    let err: AgentError | undefined;
    try {
      loadSettings({ configDir: dir, env: {} });
    } catch (e) {
      err = e as AgentError;
    }
    expect(err?.code).toBe('config_invalid');
    expect(err?.message).toContain(path.join(dir, 'config.json'));
    expect(await readFile(path.join(dir, 'config.json'), 'utf8')).toBe('{"server": {"url": ');
  });

  it('regression: a key left unquoted in config.json was quoted in the error (journal, doctor --json); now line and column', async () => {
    const dir = await tmp();
    const secret = 'wk_4f9a1c2e8b7d6a5f';
    await writeFile(path.join(dir, 'config.json'), `{\n  "server": {\n    "url": "http://hub:8787",\n    "workspaceKey": ${secret}\n  }\n}\n`);
    const messages: string[] = [];
    for (const read of [() => loadSettings({ configDir: dir, env: {} }), () => openConfigStore(dir)]) {
      let err: AgentError | undefined;
      try {
        read();
      } catch (e) {
        err = e as AgentError;
      }
      expect(err?.code).toBe('config_invalid');
      messages.push(err!.message, JSON.stringify(err));
    }
    for (const m of messages) expect(m).not.toMatch(/wk_|4f9a1c2/);
    expect(messages[0]).toContain('not valid JSON: unexpected character at line 4, column 21');
    expect(messages[2]).toContain('not valid JSON: unexpected character at line 4, column 21');
  });

  it('regression: null, true or [5000] in config.json were read as 0, 1 and 5000 (Number()); only text is converted', async () => {
    const dir = await tmp();
    for (const [listening, key] of [
      [{ followUpMs: null }, 'listening.followUpMs'],
      [{ wakeSensitivity: false }, 'listening.wakeSensitivity'],
      [{ silenceMs: [9000] }, 'listening.silenceMs'],
      [{ wakeSensitivity: '' }, 'listening.wakeSensitivity'],
    ] as const) {
      await writeFile(path.join(dir, 'config.json'), JSON.stringify({ listening }));
      expect(() => loadSettings({ configDir: dir, env: {} }), JSON.stringify(listening)).toThrow(new RegExp(`${key.replace('.', '\\.')}: .*expected number`));
    }
    await writeFile(path.join(dir, 'config.json'), JSON.stringify({ listening: { followUpMs: '2500', wakeSensitivity: 0.25 } }));
    expect(loadSettings({ configDir: dir, env: {} }).settings.listening).toMatchObject({ followUpMs: 2500, wakeSensitivity: 0.25 });
    expect(() => loadSettings({ configDir: dir, env: { SPEAKER_AGENT_WAKE_SENSITIVITY: ' ' } })).toThrow(/listening\.wakeSensitivity/);
    expect(loadSettings({ configDir: dir, env: { SPEAKER_AGENT_WAKE_SENSITIVITY: '0.7' } }).settings.listening.wakeSensitivity).toBe(0.7);
  });

  it('regression: a reconnect delay over setTimeout\'s limit fired after 1 ms (a rejected device asked again and again); now bounded', async () => {
    const dir = await tmp();
    await writeFile(path.join(dir, 'config.json'), JSON.stringify({ reconnect: { authRejectedDelayMs: 3_000_000_000, maxDelayMs: 2 ** 31 } }));
    expect(() => loadSettings({ configDir: dir, env: {} })).toThrow(/reconnect\.maxDelayMs: Too big[\s\S]*reconnect\.authRejectedDelayMs: Too big/);
    await writeFile(path.join(dir, 'config.json'), JSON.stringify({ reconnect: { authRejectedDelayMs: 86_400_000, maxDelayMs: 3_600_000 } }));
    expect(loadSettings({ configDir: dir, env: {} }).settings.reconnect).toMatchObject({ authRejectedDelayMs: 86_400_000, maxDelayMs: 3_600_000 });
  });

  it('regression: a misspelt key vanished (the agent said no key was set); keys the schema does not know are named', async () => {
    const dir = await tmp();
    await writeFile(
      path.join(dir, 'config.json'),
      JSON.stringify({ server: { url: 'https://voice.example.com', workspacekey: 'k' }, listening: { wakeSensitivty: 0.7, mode: 'wake' }, colour: 'red', reconnect: {} }),
    );
    const r = loadSettings({ configDir: dir, env: {} });
    expect(r.unknownKeys).toEqual(['server.workspacekey', 'listening.wakeSensitivty', 'colour']);
    expect(r.settings.server.workspaceKey).toBe('');
    await writeFile(path.join(dir, 'config.json'), JSON.stringify({ server: { url: 'https://voice.example.com', workspaceKey: 'k' }, mixer: { control: 'PCM' } }));
    expect(loadSettings({ configDir: dir, env: {} }).unknownKeys).toEqual([]);
  });

  it('invalid values name the setting', async () => {
    const dir = await tmp();
    expect(() => loadSettings({ configDir: dir, env: { SPEAKER_AGENT_DUPLEX: 'sometimes' } })).toThrow(/audio\.duplex/);
    expect(() => loadSettings({ configDir: dir, env: { SPEAKER_AGENT_SERVER_URL: 'not a url' } })).toThrow(/server\.url/);
    expect(() => loadSettings({ configDir: dir, env: { SPEAKER_AGENT_LIVENESS_TIMEOUT_MS: 'soon' } })).toThrow(/call\.livenessTimeoutMs/);
  });

  it('a config file that is JSON but not an object is config_invalid; an empty file is no settings', async () => {
    const dir = await tmp();
    await writeFile(path.join(dir, 'config.json'), '["server"]');
    expect(() => loadSettings({ configDir: dir, env: {} })).toThrow(/must hold a JSON object/);
    await writeFile(path.join(dir, 'config.json'), '');
    expect(loadSettings({ configDir: dir, env: {} }).settings.server.workspaceKey).toBe('');
  });

  it('writes config.json with mode 0600', async () => {
    const dir = await tmp();
    const store = openConfigStore(dir);
    store.set('server.workspaceKey', 'k');
    expect((await stat(path.join(dir, 'config.json'))).mode & 0o777).toBe(0o600);
    expect(loadSettings({ configDir: dir, env: {} }).settings.server.workspaceKey).toBe('k');
  });

  it('every environment override maps to a real setting', async () => {
    const dir = await tmp();
    const values: Record<string, string> = {
      SPEAKER_AGENT_SERVER_URL: 'http://127.0.0.1:9', SPEAKER_AGENT_DUPLEX: 'full', SPEAKER_AGENT_LOG_LEVEL: 'debug',
      SPEAKER_AGENT_LOOPBACK_CANDIDATES: 'never', SPEAKER_AGENT_ECHO_TAIL_MS: '123', SPEAKER_AGENT_LIVENESS_TIMEOUT_MS: '4000',
      SPEAKER_AGENT_SERVER_PROTOCOL: 'openai-realtime', SPEAKER_AGENT_TOKEN_URL: 'https://tokens.example.com/mint',
      SPEAKER_AGENT_LISTENING_MODE: 'manual', SPEAKER_AGENT_WAKE_SENSITIVITY: '0.7', SPEAKER_AGENT_LISTENING_SILENCE_MS: '9000',
      SPEAKER_AGENT_FOLLOW_UP_MS: '0', SPEAKER_AGENT_WAKE_ENGINE: 'pocketsphinx', SPEAKER_AGENT_WAKE_START_TIMEOUT_MS: '45000',
    };
    const env: Record<string, string> = {};
    for (const o of ENV_OVERRIDES) env[o.env] = values[o.env] ?? `v-${o.env}`;
    const r = loadSettings({ configDir: dir, env });
    for (const o of ENV_OVERRIDES.filter((x) => !x.key.startsWith('('))) {
      const v = o.key.split('.').reduce<unknown>((acc, k) => (acc as Record<string, unknown>)[k], r.settings);
      expect(String(v), o.env).toBe(values[o.env] ?? `v-${o.env}`);
    }
  });

  it('recognises loopback server URLs', () => {
    expect(isLoopbackUrl('http://127.0.0.1:8080')).toBe(true);
    expect(isLoopbackUrl('http://localhost:1')).toBe(true);
    expect(isLoopbackUrl('http://[::1]:1')).toBe(true);
    expect(isLoopbackUrl('https://voice.example.com')).toBe(false);
  });
});

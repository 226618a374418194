// `speaker-agent enroll`: saves the server URL and workspace key in config.json, creates the device identity
// once (never silently replaced), and checks with the server that the device is accepted (trust on first use
// enrolls the secret on that first request). Writes nothing when the values are already the configured ones.
import type { Command } from 'commander';
import { enroll } from '../../agent/enroll.js';
import { adoptDirectoryOwner } from '../../common/atomicFile.js';
import { EXIT_CODES } from '../../agent/errors.js';
import { fingerprint, loadIdentity } from '../../agent/identity.js';
import { defaultConfigDir, loadSettings, parseSettings, requireServerSettings, settingFromEnv } from '../../agent/settings.js';
import { emit, printJson, printLine } from '../output.js';

interface EnrollCliOptions {
  serverUrl?: string;
  workspaceKey?: string;
  resetIdentity?: boolean;
  verify: boolean;
  check?: boolean;
  json?: boolean;
}

export function registerEnroll(program: Command): void {
  program
    .command('enroll')
    .description('configure the server and workspace key, create the device identity, and check the server accepts it')
    .option('--server-url <url>', 'the Voice Assistant Service, e.g. https://voice.example.com')
    .option('--workspace-key <key>', 'workspace API key (or SPEAKER_AGENT_WORKSPACE_KEY, which keeps it out of the process list)')
    .option('--reset-identity', 'replace the device identity with a new one (the old file is kept beside it)')
    .option('--no-verify', 'do not contact the server')
    .option('--check', 'only check that a server, a key and an identity are configured (exit 0 or 3)')
    .option('--json', 'print JSON')
    .addHelpText(
      'after',
      `
The identity (client id + secret) lives in $STATE_DIRECTORY/identity.json (mode 0600). Under trust on first use
the server accepts only the first secret it saw for this client id: back the file up.

Examples:
  speaker-agent enroll --server-url https://voice.example.com --workspace-key wk_...
  SPEAKER_AGENT_WORKSPACE_KEY=wk_... speaker-agent enroll --server-url http://hub.local:8787
  speaker-agent enroll --check && echo enrolled`,
    )
    .action(async (o: EnrollCliOptions) => {
      if (o.check) return check(o);
      const key = o.workspaceKey ?? settingFromEnv('server.workspaceKey');
      const configDir = defaultConfigDir();
      // conf (and its validator) only here, where the configuration is written: the daemon never loads it.
      const { openConfigStore } = await import('../../agent/configStore.js');
      const store = openConfigStore(configDir);
      const changes: string[] = [];
      const next = structuredClone(store.store) as { server?: Record<string, unknown> };
      next.server ??= {};
      if (o.serverUrl !== undefined && next.server.url !== o.serverUrl) {
        next.server.url = o.serverUrl;
        changes.push('server.url');
      }
      if (key !== undefined && key !== '' && next.server.workspaceKey !== key) {
        next.server.workspaceKey = key;
        changes.push('server.workspaceKey');
      }
      if (changes.length) {
        parseSettings(next, 'enrollment values'); // a bad URL fails here, before anything is written
        store.set('server', next.server);
        adoptDirectoryOwner(store.path, { groupRead: true }); // `sudo speaker-agent enroll` on an installed speaker: the service reads it
      }
      const loaded = loadSettings({ configDir });
      const r = await enroll({ settings: loaded.settings, stateDir: loaded.stateDir, resetIdentity: o.resetIdentity, verify: o.verify });
      const result = {
        server: loaded.settings.server.url,
        clientId: r.identity.clientId,
        secretFingerprint: r.secretFingerprint,
        identityFile: r.identityFile,
        identityCreated: r.created,
        configFile: loaded.configPath,
        configChanged: changes,
        verdict: r.verdict,
        error: r.error?.toJSON(),
      };
      if (o.json) printJson(result);
      else {
        if (changes.length) printLine(`Saved ${changes.join(' and ')} in ${loaded.configPath}.`);
        for (const l of r.lines) printLine(l);
      }
      process.exitCode =
        r.verdict === 'rejected' ? EXIT_CODES.auth : r.verdict === 'unreachable' || r.verdict === 'server_error' ? EXIT_CODES.network : EXIT_CODES.ok;
    });
}

async function check(o: EnrollCliOptions): Promise<void> {
  const loaded = loadSettings();
  requireServerSettings(loaded.settings);
  const { identity } = await loadIdentity(loaded.stateDir);
  const s = loaded.settings.server;
  emit(
    o,
    { enrolled: true, server: s.url, workspaceKeyFingerprint: fingerprint(s.workspaceKey), clientId: identity.clientId, secretFingerprint: fingerprint(identity.clientSecret) },
    (r) => `enrolled: server ${r.server}, client ${r.clientId}, secret ${r.secretFingerprint}`,
  );
}


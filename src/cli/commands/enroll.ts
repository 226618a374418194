// `speaker-agent enroll`: creates the device identity once (never silently replaced), checks with the server that
// the device is accepted (trust on first use enrolls the secret on that first request), and only then saves a new
// server URL or workspace key in config.json: a value the server refuses or cannot be asked about is not saved
// over one that works (the service reads config.json at its next start). `--no-verify` saves without asking.
// Writes nothing when the values are already the configured ones.
import type { Command } from 'commander';
import { enroll, tofuRecoveryLines, type EnrollResult } from '../../agent/enroll.js';
import { adoptDirectoryOwner } from '../../common/atomicFile.js';
import { AgentError, EXIT_CODES } from '../../agent/errors.js';
import { fingerprint, identityPath, loadIdentity } from '../../agent/identity.js';
import { defaultConfigDir, loadSettings, parseSettings, requireServerSettings, settingFromEnv, type Settings } from '../../agent/settings.js';
import { emit, printJson, printLine } from '../output.js';
import { rejectionLines } from '../rejectionAdvice.js';
import { writeFailureReason } from '../writeFailure.js';

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
      const loaded = loadSettings({ configDir });
      // the server is asked with the new values, as the service will use them once saved
      let settings: Settings = loaded.settings;
      if (changes.length) {
        const proposed = parseSettings(next, 'enrollment values').server; // a bad URL fails here, before anything is written
        settings = { ...settings, server: { ...settings.server, url: proposed.url, workspaceKey: proposed.workspaceKey } };
      }
      const r = await enroll({ settings, stateDir: loaded.stateDir, resetIdentity: o.resetIdentity, verify: o.verify }).catch((err: unknown) => {
        throw notSaved(err, identityPath(loaded.stateDir), `the identity was not saved${changes.length ? ', nor ' + changes.join(' and ') : ''}`);
      });
      const save = changes.length > 0 && (r.verdict === 'accepted' || r.verdict === 'skipped');
      if (save) {
        try {
          store.set('server', next.server);
        } catch (err) {
          throw notSaved(err, store.path, `the configuration was not saved (${changes.join(' and ')}): the file is as it was`);
        }
        adoptDirectoryOwner(store.path, { groupRead: true }); // `sudo speaker-agent enroll` on an installed speaker: the service reads it
      }
      const result = {
        server: settings.server.url,
        clientId: r.identity.clientId,
        secretFingerprint: r.secretFingerprint,
        identityFile: r.identityFile,
        identityCreated: r.created,
        configFile: loaded.configPath,
        configChanged: save ? changes : [],
        /** values given but not saved: the server refused them or could not be asked */
        configNotSaved: save ? [] : changes,
        verdict: r.verdict,
        error: r.error?.toJSON(),
      };
      if (o.json) printJson(result);
      else {
        if (save) printLine(`Saved ${changes.join(' and ')} in ${loaded.configPath}.`);
        for (const l of withAdvice(r)) printLine(l);
        if (changes.length && !save) {
          printLine(`Not saved: ${changes.join(' and ')} (${loaded.configPath} is as it was). To save without asking the server: add --no-verify.`);
        }
      }
      process.exitCode =
        r.verdict === 'rejected' ? EXIT_CODES.auth : r.verdict === 'unreachable' || r.verdict === 'server_error' ? EXIT_CODES.network : EXIT_CODES.ok;
    });
}

/** agent/enroll.ts ends a rejection with generic trust-on-first-use advice (the lost-secret recovery whatever the
 *  server said): replaced by the advice for the server's code, which enroll and doctor share. */
function withAdvice(r: EnrollResult): string[] {
  if (r.verdict !== 'rejected' || !r.error) return r.lines;
  const generic = tofuRecoveryLines(r.error, r.identityFile);
  const tail = r.lines.slice(-generic.length);
  const own = tail.length === generic.length && tail.every((l, i) => l === generic[i]) ? r.lines.slice(0, -generic.length) : r.lines;
  return [...own, ...rejectionLines(r.error, r.identity.clientId)];
}

/** A write the disk refused, as a configuration error that names the file and what was not saved; node's own
 *  message ("ENOSPC: no space left on device, write") names neither. Anything else passes through. */
function notSaved(err: unknown, file: string, what: string): unknown {
  const reason = err instanceof AgentError ? undefined : writeFailureReason(err, 'sudo speaker-agent enroll ...');
  if (!reason) return err;
  return new AgentError('config_invalid', `cannot write ${file}: ${reason}. ${what[0].toUpperCase()}${what.slice(1)}; run enroll again once it can be written.`, { cause: err });
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


// `speaker-agent enroll`: creates the device identity (or shows the existing one) and checks with the server
// that it is accepted. Under trust on first use the first accepted request enrolls the secret; a rejection
// (401/404) is explained plainly, with the ways to recover. Never prints the secret, only its fingerprint.
import { AgentError } from './errors.js';
import { ensureIdentity, fingerprint, identityPath, type Identity } from './identity.js';
import { serviceClient } from './device.js';
import { requireServerSettings, type Settings } from './settings.js';

export interface EnrollOptions {
  settings: Settings;
  stateDir: string;
  /** replace an existing identity (`--reset-identity`); the old file is kept beside it */
  resetIdentity?: boolean;
  /** contact the server (default true) */
  verify?: boolean;
}

export type EnrollVerdict = 'accepted' | 'rejected' | 'unreachable' | 'server_error' | 'skipped';

export interface EnrollResult {
  identity: Identity;
  created: boolean;
  secretFingerprint: string;
  identityFile: string;
  verdict: EnrollVerdict;
  /** the failure, when the verdict is not accepted/skipped */
  error?: AgentError;
  /** human-readable lines for the CLI, without the secret */
  lines: string[];
}

export function tofuRecoveryLines(err: AgentError, identityFile: string): string[] {
  return [
    // err.message already reads "the server rejected this device: <reason>" (said once)
    `${err.message.charAt(0).toUpperCase()}${err.message.slice(1)}.`,
    'The server uses trust on first use: the first secret a client id connects with is enrolled, and from then',
    'on only that secret is accepted. A rejection means the secret on this device is not the enrolled one',
    '(identity.json was lost, restored from the wrong backup, or replaced), the workspace key is wrong, or an',
    'administrator disabled or never registered this client.',
    'To recover:',
    `  1. restore the original ${identityFile} from a backup (it must have mode 0600), or`,
    '  2. ask the workspace admin to reset (or register/activate) this client id in the dashboard, then run',
    '     plain `speaker-agent enroll` again (the reset client enrolls this secret for the same id), and',
    '  3. check server.workspaceKey / SPEAKER_AGENT_WORKSPACE_KEY.',
  ];
}

export async function enroll(o: EnrollOptions): Promise<EnrollResult> {
  const r = await ensureIdentity(o.stateDir, { reset: o.resetIdentity });
  const file = identityPath(o.stateDir);
  const fp = fingerprint(r.identity.clientSecret);
  const lines = [
    r.created ? `Created a new device identity in ${file} (mode 0600).` : `Device identity in ${file}.`,
    `  client id:          ${r.identity.clientId}`,
    `  secret fingerprint: ${fp}`,
    `  created:            ${r.identity.createdAt}`,
  ];
  if (r.keptOld) lines.push(`  the replaced identity was kept in ${r.keptOld}`);
  if (r.fixedMode !== undefined) lines.push(`  fixed the file mode from ${r.fixedMode.toString(8)} to 600`);
  if (r.created) lines.push('Keep a backup of identity.json: under trust on first use a lost secret locks the device out.');
  const base = { identity: r.identity, created: r.created, secretFingerprint: fp, identityFile: file };
  if (o.verify === false) return { ...base, verdict: 'skipped', lines };

  requireServerSettings(o.settings);
  const client = serviceClient(o.settings, r.identity);
  try {
    await client.createSession(['text', 'audio']);
    lines.push(`The server at ${o.settings.server.url} accepted this device${r.created ? ' and enrolled its secret' : ''}.`);
    return { ...base, verdict: 'accepted', lines };
  } catch (err) {
    const e = err instanceof AgentError ? err : new AgentError('internal', String(err), { cause: err });
    if (e.code === 'auth_rejected') return { ...base, verdict: 'rejected', error: e, lines: [...lines, ...tofuRecoveryLines(e, file)] };
    if (e.code === 'network') {
      return { ...base, verdict: 'unreachable', error: e, lines: [...lines, `Could not verify with the server: ${e.message}. The identity is kept; run enroll again once the server is reachable.`] };
    }
    return { ...base, verdict: 'server_error', error: e, lines: [...lines, `The server could not verify this device: ${e.message}.`] };
  }
}

// What to do when the server rejects this device (auth_rejected), by the server's own code: `enroll` and `doctor`
// say the same. A wrong workspace key and a secret the server does not know need opposite fixes: the key is
// entered again and the identity kept; a lost secret is restored, or the admin resets the client and this same
// identity enrolls again (under trust on first use a reset client enrolls the next secret it sees, the companion's
// `client reset` included). `enroll --reset-identity` is advised for neither: it makes a new client id too, and
// leaves the one just reset behind.
import type { AgentError } from '../agent/errors.js';
import type { RealtimeErrorCode } from '../protocol/realtimeErrors.js';

export interface RejectionAdvice {
  /** what the code means for this device, one sentence */
  why: string;
  /** what to do, one line (doctor's fix) */
  fix: string;
}

/** The codes that reject the device: realtime routes answer them in lower case, REST ones (restErrors.ts) the same in upper. */
type RejectionCode = Extract<RealtimeErrorCode, 'invalid_workspace_key' | 'secret_mismatch' | 'client_not_found' | 'client_not_activated'>;

const resetAndEnroll = (clientId: string) =>
  `have the workspace admin reset this client (\`speaker-agent companion client reset ${clientId}\` on a companion, or the dashboard) and run plain \`speaker-agent enroll\``;

const ADVICE: Record<RejectionCode, (clientId: string) => RejectionAdvice> = {
  invalid_workspace_key: () => ({
    why: 'The workspace key is not one the server knows (or not the key of the workspace this client enrolled in). The identity is fine: keep it.',
    fix: 'check the workspace key (dashboard -> workspace settings), then `speaker-agent enroll --workspace-key KEY`',
  }),
  secret_mismatch: (id) => ({
    why:
      'The server uses trust on first use: it accepts only the first secret it saw for this client id, and this device presents ' +
      'another one (identity.json lost, replaced, or restored from the wrong backup).',
    fix: `restore identity.json from a backup, or ${resetAndEnroll(id)}`,
  }),
  client_not_found: (id) => ({
    why: `The server does not know client ${id} and does not enroll new clients by itself (closed enrollment).`,
    fix: `ask the workspace admin to register client ${id} (a companion enrolls new clients while its enrollment is open), or restore the identity.json this speaker enrolled with; then run \`speaker-agent enroll\``,
  }),
  client_not_activated: (id) => ({
    why: 'An administrator disabled this client.',
    fix: `ask the workspace admin to enable it again (\`speaker-agent companion client enable ${id}\` on a companion, or the dashboard)`,
  }),
};

export function rejectionAdvice(err: AgentError, clientId: string): RejectionAdvice {
  const code = (err.serverCode ?? '').toLowerCase();
  if (Object.hasOwn(ADVICE, code)) return ADVICE[code as RejectionCode](clientId);
  // an unknown code (another server, a proxy speaking the service's shape): the two likely causes, the key first
  return {
    why: 'The server did not say which credential it refused.',
    fix: `check the workspace key (dashboard -> workspace settings); if it is right, restore identity.json from a backup, or ${resetAndEnroll(clientId)}`,
  };
}

/** The lines `enroll` prints for a rejection: the server's reason once, what it means, the fix. */
export function rejectionLines(err: AgentError, clientId: string): string[] {
  const a = rejectionAdvice(err, clientId);
  // err.message is already "the server rejected this device: <reason> (<code>)": said once, capitalised
  return [`${err.message.charAt(0).toUpperCase()}${err.message.slice(1)}.`, a.why, `To fix: ${a.fix}.`];
}

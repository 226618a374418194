// Device authentication for every route, REST and realtime (spec section 5).
//
// Each request carries X-Workspace-Key, X-Client-Id (UUID) and X-Client-Secret (>= 32 characters).
// Trust on first use: the first request of a client id with a valid workspace key enrolls its secret (the
// client row is created with INSERT ... ON CONFLICT DO NOTHING, so of two simultaneous first requests exactly
// one enrolls and the other is compared against it); later requests must present the same secret.
// Only SHA-256 hashes of secrets and keys are stored; comparisons are constant-time.
//
// Decisions (documented in the README):
// - A client id belongs to one workspace. The same id presenting another workspace's valid key gets
//   invalid_workspace_key ("not the workspace this client is enrolled in"): nothing about the other workspace
//   is revealed, and the device's own workspace key is the thing that is wrong.
// - Secret checks come before the disabled check, so only the real device learns that it was disabled.
// - `client reset` clears the stored secret: the next request of that id with its workspace's key enrolls the
//   new secret, also under closed enrollment (the documented recovery for a lost secret).
import type { IncomingHttpHeaders } from 'node:http';
import { HEADER, isUuid, MIN_SECRET_LENGTH } from '../../protocol/headers.js';
import type { RealtimeErrorCode } from '../../protocol/realtimeErrors.js';
import type { RestErrorCode } from '../../protocol/restErrors.js';
import { dbGeneration, type Db } from '../db/database.js';
import { enrollResetClient, getClient, insertClientIfAbsent, touchClient, type ClientRow } from '../db/clients.js';
import { findWorkspaceByKeyHash } from '../db/workspaces.js';
import { digestsEqual, sha256Hex } from './secrets.js';

export interface AuthenticatedDevice {
  workspaceId: string;
  clientId: string;
  /** true when this request enrolled the client's secret */
  enrolledNow: boolean;
}

export type AuthFailure = { ok: false; code: RealtimeErrorCode; restCode: RestErrorCode; message: string };
export type AuthResult = { ok: true; device: AuthenticatedDevice } | AuthFailure;

export interface DeviceAuthOptions {
  /** 'open' enrolls unknown clients (trust on first use); 'closed' refuses them with client_not_found */
  enrollment: 'open' | 'closed';
  /** last_seen_at is written at most this often per client (a write per request would cost throughput) */
  touchIntervalMs?: number;
}

const FAILURE_REST_CODE = {
  missing_header: 'MISSING_HEADER',
  invalid_client_id: 'INVALID_CLIENT_ID',
  invalid_client_secret: 'INVALID_CLIENT_SECRET',
  invalid_workspace_key: 'INVALID_WORKSPACE_KEY',
  secret_mismatch: 'SECRET_MISMATCH',
  client_not_found: 'CLIENT_NOT_FOUND',
  client_not_activated: 'CLIENT_NOT_ACTIVATED',
} as const satisfies Partial<Record<RealtimeErrorCode, RestErrorCode>>;

type AuthCode = keyof typeof FAILURE_REST_CODE;

function fail(code: AuthCode, message: string): AuthFailure {
  return { ok: false, code, restCode: FAILURE_REST_CODE[code], message };
}

function headerValue(headers: IncomingHttpHeaders, name: string): string {
  const v = headers[name];
  return (Array.isArray(v) ? v[0] ?? '' : v ?? '').trim();
}

const DISPLAY_NAME: Record<string, string> = {
  [HEADER.workspaceKey]: 'X-Workspace-Key',
  [HEADER.clientId]: 'X-Client-Id',
  [HEADER.clientSecret]: 'X-Client-Secret',
};

const CACHE_MAX = 10_000;

export class DeviceAuthenticator {
  private readonly lastTouch = new Map<string, number>();
  /** Recent successes by a digest of all three credentials, valid while the database is unchanged
   *  (dbGeneration): a device polling the API costs one hash instead of two hashes and two queries, and a
   *  disable/reset by an administrator (another connection) invalidates it at once. */
  private readonly recent = new Map<string, { generation: string; workspaceId: string; clientId: string }>();
  private readonly touchIntervalMs: number;

  constructor(
    private readonly db: Db,
    private readonly opts: DeviceAuthOptions,
  ) {
    this.touchIntervalMs = opts.touchIntervalMs ?? 60_000;
  }

  authenticate(headers: IncomingHttpHeaders): AuthResult {
    for (const name of [HEADER.workspaceKey, HEADER.clientId, HEADER.clientSecret]) {
      if (!headerValue(headers, name)) return fail('missing_header', `missing required header ${DISPLAY_NAME[name]}`);
    }
    const workspaceKey = headerValue(headers, HEADER.workspaceKey);
    const rawClientId = headerValue(headers, HEADER.clientId);
    const secret = headerValue(headers, HEADER.clientSecret);
    if (!isUuid(rawClientId)) return fail('invalid_client_id', 'X-Client-Id must be a UUID');
    if (secret.length < MIN_SECRET_LENGTH) {
      return fail('invalid_client_secret', `X-Client-Secret must be at least ${MIN_SECRET_LENGTH} characters`);
    }
    const clientId = rawClientId.toLowerCase();
    const credentials = sha256Hex(`${workspaceKey}\n${clientId}\n${secret}`);
    const hit = this.recent.get(credentials);
    if (hit && hit.generation === dbGeneration(this.db)) {
      this.touch(clientId);
      return { ok: true, device: { workspaceId: hit.workspaceId, clientId, enrolledNow: false } };
    }
    const result = this.authenticateUncached(workspaceKey, clientId, secret);
    if (result.ok) {
      if (this.recent.size >= CACHE_MAX) this.recent.clear();
      this.recent.set(credentials, { generation: dbGeneration(this.db), workspaceId: result.device.workspaceId, clientId });
    }
    return result;
  }

  private authenticateUncached(workspaceKey: string, clientId: string, secret: string): AuthResult {
    const workspace = findWorkspaceByKeyHash(this.db, sha256Hex(workspaceKey));
    if (!workspace) return fail('invalid_workspace_key', 'X-Workspace-Key matches no workspace');
    const secretHash = sha256Hex(secret);

    let client = getClient(this.db, clientId);
    if (!client) {
      if (this.opts.enrollment === 'closed') {
        return fail('client_not_found', 'this client id is not registered and the server does not enroll new clients');
      }
      if (insertClientIfAbsent(this.db, clientId, workspace.id, secretHash)) {
        this.lastTouch.set(clientId, performance.now());
        return { ok: true, device: { workspaceId: workspace.id, clientId, enrolledNow: true } };
      }
      client = getClient(this.db, clientId); // a simultaneous first request enrolled it: compare against that
      if (!client) return fail('client_not_found', 'this client id is not registered');
    }
    return this.check(client, workspace.id, secretHash);
  }

  private check(client: ClientRow, workspaceId: string, secretHash: string): AuthResult {
    if (client.workspace_id !== workspaceId) {
      return fail('invalid_workspace_key', 'X-Workspace-Key is not the key of the workspace this client is enrolled in');
    }
    let enrolledNow = false;
    if (client.secret_hash === null) {
      if (client.status !== 'active') return fail('client_not_activated', 'this client was disabled by an administrator');
      // reset by an administrator: this request enrolls the new secret (or loses the race and is compared)
      if (enrollResetClient(this.db, client.id, secretHash)) {
        enrolledNow = true;
      } else {
        const again = getClient(this.db, client.id);
        if (!again?.secret_hash) return fail('client_not_found', 'this client id is not registered');
        client = again;
      }
    }
    if (!enrolledNow && !digestsEqual(client.secret_hash ?? '', secretHash)) {
      return fail('secret_mismatch', 'X-Client-Secret does not match the secret this client enrolled with');
    }
    if (client.status !== 'active') return fail('client_not_activated', 'this client was disabled by an administrator');
    this.touch(client.id);
    return { ok: true, device: { workspaceId, clientId: client.id, enrolledNow } };
  }

  private touch(clientId: string): void {
    // the throttle on the monotonic clock: after a wall-clock step back (a bad time server) Date.now's "since"
    // stayed negative, and last_seen_at froze for as long as the step
    const now = performance.now();
    const last = this.lastTouch.get(clientId);
    if (last !== undefined && now - last < this.touchIntervalMs) return;
    this.lastTouch.set(clientId, now);
    try {
      touchClient(this.db, clientId);
    } catch {
      /* last_seen_at is informational: a busy database must not fail the request */
    }
  }
}

// Test helpers for the companion server: a real server on an ephemeral port with a fresh data directory,
// a workspace made through the admin functions, and devices with real credentials.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CompanionAdmin } from '../../src/companion/admin.js';
import { startCompanionServer, type CompanionServer } from '../../src/companion/server.js';
import { loadCompanionSettings, type CompanionSettingsInput } from '../../src/companion/settings.js';
import { deviceHeaders } from '../../src/protocol/headers.js';

export interface Device {
  clientId: string;
  secret: string;
  key: string;
  headers: Record<string, string>;
}

export function newDevice(workspaceKey: string): Device {
  const clientId = randomUUID();
  const secret = randomBytes(32).toString('base64url');
  return { clientId, secret, key: workspaceKey, headers: deviceHeaders({ workspaceKey, clientId, clientSecret: secret }) };
}

export function tempDataDir(prefix = 'companion-test-'): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

export interface TestCompanion {
  server: CompanionServer;
  dataDir: string;
  /** key of workspace "alpha" */
  key: string;
  workspaceId: string;
  /** key of a second workspace "beta" */
  otherKey: string;
  otherWorkspaceId: string;
  close(): Promise<void>;
}

/** A running server with two workspaces (alpha, beta) and no voices or stories. */
export async function startTestCompanion(overrides: CompanionSettingsInput = {}): Promise<TestCompanion> {
  const dataDir = tempDataDir();
  const admin = new CompanionAdmin(dataDir);
  const a = admin.createWorkspace('alpha');
  const b = admin.createWorkspace('beta');
  admin.close();
  const settings = loadCompanionSettings({ host: '127.0.0.1', port: 0, dataDir, log: { level: 'silent' }, ...overrides }, {});
  const server = await startCompanionServer(settings);
  return {
    server,
    dataDir,
    key: a.key,
    workspaceId: a.workspace.id,
    otherKey: b.key,
    otherWorkspaceId: b.workspace.id,
    async close() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: Buffer;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export async function api(
  base: string,
  method: string,
  route: string,
  opts: { device?: Device; headers?: Record<string, string>; json?: unknown; body?: RequestInit['body'] } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...(opts.device?.headers ?? {}), ...(opts.headers ?? {}) };
  let body = opts.body;
  if (opts.json !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(opts.json);
  }
  const res = await fetch(base + route, { method, headers, body });
  const buf = Buffer.from(await res.arrayBuffer());
  let json: unknown;
  if ((res.headers.get('content-type') ?? '').includes('json')) json = JSON.parse(buf.toString('utf8'));
  return { status: res.status, headers: res.headers, body: buf, json };
}

/** Asserts nothing itself: returns [status, code] of a REST error for compact expectations. */
export function restError(r: ApiResponse): [number, string | undefined] {
  return [r.status, r.json?.detail?.code];
}

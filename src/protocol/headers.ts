// Device authentication headers (spec section 5), shared by the agent (sends them) and the companion (checks them).

export const HEADER = {
  workspaceKey: 'x-workspace-key',
  clientId: 'x-client-id',
  clientSecret: 'x-client-secret',
  appSource: 'x-app-source',
} as const;

/** Secrets shorter than this are refused (spec section 8). */
export const MIN_SECRET_LENGTH = 32;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID_RE.test(value);
}

export interface DeviceCredentials {
  workspaceKey: string;
  clientId: string;
  clientSecret: string;
  appSource?: string;
}

/** The headers a device sends on every request, REST and realtime. */
export function deviceHeaders(c: DeviceCredentials): Record<string, string> {
  const h: Record<string, string> = {
    [HEADER.workspaceKey]: c.workspaceKey,
    [HEADER.clientId]: c.clientId,
    [HEADER.clientSecret]: c.clientSecret,
  };
  if (c.appSource) h[HEADER.appSource] = c.appSource;
  return h;
}

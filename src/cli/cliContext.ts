// What commands share: the loaded settings, the identity and a client for the service (the device's parts come
// from agent/device.ts), each built on demand so a command only pays for (and only fails on) what it uses.
import { mkdir } from 'node:fs/promises';
import { loadIdentity, type Identity } from '../agent/identity.js';
import { serviceClient } from '../agent/device.js';
import { loadSettings, readConfigFile, requireServerSettings, settingFromEnv, type LoadedSettings } from '../agent/settings.js';
import type { ServiceClient } from '../agent/serviceClient.js';
import type { Logger } from '../common/logger.js';

export function settings(): LoadedSettings {
  return loadSettings();
}

export interface ServiceAccess {
  loaded: LoadedSettings;
  identity: Identity;
  client: ServiceClient;
}

/** Settings + identity + a ServiceClient; AgentError config_invalid / identity_missing when not enrolled. */
export async function serviceAccess(loaded: LoadedSettings = settings()): Promise<ServiceAccess> {
  requireServerSettings(loaded.settings);
  const { identity } = await loadIdentity(loaded.stateDir);
  return { loaded, identity, client: serviceClient(loaded.settings, identity) };
}

/**
 * Whether the user configured a server: config.json has server.url, or SPEAKER_AGENT_SERVER_URL / a
 * workspace key is set. Without one, `run` starts a local companion server instead.
 */
export function isServerConfigured(loaded: LoadedSettings, env: NodeJS.ProcessEnv = process.env): boolean {
  if (settingFromEnv('server.url', env) || loaded.settings.server.workspaceKey) return true;
  const server = readConfigFile(loaded.configDir).server as { url?: unknown } | undefined;
  return server?.url !== undefined;
}

export interface LocalCompanion {
  url: string;
  workspaceKey: string;
  workspaceName: string;
  close(): Promise<void>;
}

/**
 * A companion server in this process on 127.0.0.1 (an ephemeral port unless SPEAKER_AGENT_COMPANION_PORT is
 * set), with the default workspace (its key kept in <dataDir>/default-workspace.key), for `run` when no
 * server is configured.
 */
export async function startLocalCompanion(dataDir: string, logger: Logger): Promise<LocalCompanion> {
  const [{ loadCompanionSettings, companionSettingFromEnv }, { startCompanionServer }, { seedDefaults, DEFAULT_WORKSPACE_NAME }] = await Promise.all([
    import('../companion/settings.js'),
    import('../companion/server.js'),
    import('../companion/admin.js'),
  ]);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const seed = seedDefaults(dataDir);
  const cs = loadCompanionSettings({ host: '127.0.0.1', dataDir, ...(companionSettingFromEnv('port') ? {} : { port: 0 }) });
  const server = await startCompanionServer(cs, { logger: logger.child({ component: 'companion' }) });
  return { url: server.url, workspaceKey: seed.key, workspaceName: DEFAULT_WORKSPACE_NAME, close: () => server.close() };
}

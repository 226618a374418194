// Starts the real companion server (startCompanionServer: Fastify, SQLite, DeviceAuthenticator, espeak-ng,
// pocketsphinx, the realtime plugin) on an ephemeral loopback port with a fresh data directory and one workspace,
// and hands out device credentials for it.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sha256Hex } from '../../src/companion/auth/secrets.js';
import { createWorkspace } from '../../src/companion/db/workspaces.js';
import { upsertStory } from '../../src/companion/db/stories.js';
import { startCompanionServer, type CompanionServer } from '../../src/companion/server.js';
import { loadCompanionSettings, type CompanionSettingsInput } from '../../src/companion/settings.js';
import { deviceHeaders } from '../../src/protocol/headers.js';

export interface RealtimeTestServer {
  server: CompanionServer;
  url: string;
  workspaceId: string;
  workspaceKey: string;
  /** headers of a new device (fresh client id and secret) */
  newDevice(): Record<string, string>;
  addStory(name: string, transcript: string): void;
  close(): Promise<void>;
}

export async function startRealtimeTestServer(overrides: CompanionSettingsInput = {}): Promise<RealtimeTestServer> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'companion-rt-'));
  const settings = loadCompanionSettings({ host: '127.0.0.1', port: 0, dataDir, log: { level: 'silent' }, ...overrides }, {});
  const server = await startCompanionServer(settings);
  const workspaceKey = `wk_${randomBytes(24).toString('hex')}`;
  const ws = createWorkspace(server.context.db, `test-${randomUUID().slice(0, 8)}`, sha256Hex(workspaceKey));
  return {
    server,
    url: server.url,
    workspaceId: ws.id,
    workspaceKey,
    newDevice: () => deviceHeaders({ workspaceKey, clientId: randomUUID(), clientSecret: randomBytes(24).toString('hex') }),
    addStory: (name, transcript) =>
      void upsertStory(server.context.db, {
        workspace_id: ws.id,
        slug: name.toLowerCase().replace(/[^a-z0-9]+/g, '-'),
        name,
        transcript,
        excerpt: null,
        age_group: null,
        illustration_url: null,
        illustration_alt: null,
        sort_order: 0,
        default_voice_profile_id: null,
      }),
    close: async () => {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

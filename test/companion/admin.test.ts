import { readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AdminError, CompanionAdmin, DEFAULT_KEY_FILE, seedDefaults } from '../../src/companion/admin.js';
import { DB_FILE } from '../../src/companion/db/database.js';
import { startCompanionServer } from '../../src/companion/server.js';
import { loadCompanionSettings } from '../../src/companion/settings.js';
import { api, newDevice, tempDataDir } from './helpers.js';

let dataDir: string;
beforeEach(() => {
  dataDir = tempDataDir();
});
afterEach(() => {
  rmSync(dataDir, { recursive: true, force: true });
});

describe('CompanionAdmin', () => {
  it('creates workspaces whose key is returned once and stored only as a hash', () => {
    const admin = new CompanionAdmin(dataDir);
    const { workspace, key } = admin.createWorkspace('Kitchen');
    expect(key).toMatch(/^wk_[A-Za-z0-9_-]{43}$/);
    expect(admin.listWorkspaces()).toEqual([expect.objectContaining({ id: workspace.id, name: 'Kitchen', clients: 0, voices: 0 })]);
    expect(JSON.stringify(admin.listWorkspaces())).not.toContain(key);
    admin.close();
    for (const f of [DB_FILE, `${DB_FILE}-wal`]) {
      try {
        expect(readFileSync(path.join(dataDir, f)).includes(Buffer.from(key))).toBe(false);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      }
    }
    const again = new CompanionAdmin(dataDir);
    expect(() => again.createWorkspace('  ')).toThrow(AdminError);
    expect(() => again.workspace('nope')).toThrow(/no workspace/);
    again.close();
  });

  it('adds workspace voices from a description and refuses one it cannot design', () => {
    const admin = new CompanionAdmin(dataDir);
    admin.createWorkspace('w');
    const v = admin.addWorkspaceVoice({ workspace: 'w', name: 'Deep', design: 'a deep slow male voice' });
    expect(v).toMatchObject({ category: 'workspace', created_by_client: null, name: 'Deep' });
    expect(JSON.parse(v.params_json)).toMatchObject({ language: 'en-us' });
    expect(() => admin.addWorkspaceVoice({ workspace: 'w', name: 'X', design: 'zzz qqq' })).toThrow(AdminError);
    expect(() => admin.addWorkspaceVoice({ workspace: 'w', name: 'X', design: 'a deep voice', language: 'xx-yy' })).toThrow(AdminError);
    admin.close();
  });

  it('imports stories all or nothing, resolving default voices by name or id; re-import replaces by slug', () => {
    const admin = new CompanionAdmin(dataDir);
    admin.createWorkspace('w');
    const v = admin.addWorkspaceVoice({ workspace: 'w', name: 'Deep', design: 'a deep male voice' });
    const rows = admin.importStories('w', {
      stories: [
        { slug: 'one', name: 'One', transcript: 'First.', default_voice: 'Deep', sort_order: 5 },
        { slug: 'two', name: 'Two', transcript: 'Second.', default_voice: v.id },
        { name: 'Unslugged', transcript: 'Hidden.' },
      ],
    });
    expect(rows.map((r) => [r.slug, r.default_voice_profile_id, r.sort_order])).toEqual([
      ['one', v.id, 5],
      ['two', v.id, 1],
      [null, null, 2],
    ]);
    expect(() => admin.importStories('w', [{ slug: 'three', name: 'Three', transcript: 'x' }, { slug: 'Bad Slug!', name: 'x', transcript: 'x' }])).toThrow(/story 2: slug/);
    expect(() => admin.importStories('w', [{ slug: 'four', name: 'Four', transcript: 'x', default_voice: 'Nobody' }])).toThrow(/default voice 'Nobody'/);
    expect(() => admin.importStories('w', { nope: 1 })).toThrow(AdminError);
    // nothing of the failed imports was written
    const count = () => (admin.db.prepare('SELECT count(*) AS n FROM stories').get() as { n: number }).n;
    expect(count()).toBe(3);
    const replaced = admin.importStories('w', [{ slug: 'one', name: 'One again', transcript: 'New text.' }]);
    expect(replaced[0].id).toBe(rows[0].id);
    expect(count()).toBe(3);
    admin.close();
  });

  it('lists, disables, enables and resets clients', async () => {
    const admin = new CompanionAdmin(dataDir);
    const { key } = admin.createWorkspace('w');
    admin.close();
    const server = await startCompanionServer(loadCompanionSettings({ port: 0, dataDir, log: { level: 'silent' } }, {}));
    try {
      const d = newDevice(key);
      expect((await api(server.url, 'GET', '/v1/app/stories', { device: d })).status).toBe(200);
      const a = new CompanionAdmin(dataDir);
      expect(a.listClients('w')).toEqual([expect.objectContaining({ id: d.clientId, status: 'active', enrolled: true })]);
      expect(a.disableClient(d.clientId).status).toBe('disabled');
      expect((await api(server.url, 'GET', '/v1/app/stories', { device: d })).json.detail.code).toBe('CLIENT_NOT_ACTIVATED');
      expect(a.enableClient(d.clientId).status).toBe('active');
      expect(a.resetClient(d.clientId).enrolled).toBe(false);
      const sameIdNewSecret = newDevice(key);
      sameIdNewSecret.headers['x-client-id'] = d.clientId;
      expect((await api(server.url, 'GET', '/v1/app/stories', { device: sameIdNewSecret })).status).toBe(200);
      expect((await api(server.url, 'GET', '/v1/app/stories', { device: d })).json.detail.code).toBe('SECRET_MISMATCH');
      a.close();
    } finally {
      await server.close();
    }
  });
});

describe('seedDefaults', () => {
  it('creates a default workspace (key file 0600), voices with previews and stories; idempotent', async () => {
    const seeded = seedDefaults(dataDir);
    expect(seeded.created).toBe(true);
    expect(statSync(path.join(dataDir, DEFAULT_KEY_FILE)).mode & 0o777).toBe(0o600);
    expect(readFileSync(seeded.keyFile, 'utf8').trim()).toBe(seeded.key);
    const again = seedDefaults(dataDir);
    expect(again).toMatchObject({ created: false, key: seeded.key, workspaceId: seeded.workspaceId });

    const server = await startCompanionServer(loadCompanionSettings({ port: 0, dataDir, log: { level: 'silent' } }, {}));
    try {
      const d = newDevice(seeded.key);
      const stories = (await api(server.url, 'GET', '/v1/app/stories', { device: d })).json;
      expect(stories.length).toBeGreaterThanOrEqual(3);
      // previews of admin-made voices are rendered in the background after start
      let voices: Array<{ preview_url?: string; category: string }> = [];
      for (let i = 0; i < 100; i++) {
        voices = (await api(server.url, 'GET', '/v1/app/voices', { device: d })).json.voices;
        if (voices.every((v) => v.preview_url)) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(voices.length).toBeGreaterThanOrEqual(3);
      expect(voices.every((v) => v.category === 'workspace' && v.preview_url)).toBe(true);
      expect((await fetch(voices[0].preview_url!)).status).toBe(200);
      const read = await api(server.url, 'POST', `/v1/app/stories/${stories[0].slug}/read`, { device: d });
      expect(read.status).toBe(200);
      expect(read.body.length).toBeGreaterThan(44 + 22050 * 2 * 5);
    } finally {
      await server.close();
    }
  });
});

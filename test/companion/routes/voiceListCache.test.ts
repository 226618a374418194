// GET /voices is cached per device (and authentication per credential set) until the database changes. These
// tests poll through real HTTP and change the database through an administrator's own connection (as the
// `speaker-agent companion ...` commands do from another process): every change must show on the next poll.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompanionAdmin } from '../../../src/companion/admin.js';
import { api, newDevice, restError, startTestCompanion, type Device, type TestCompanion } from '../helpers.js';

let t: TestCompanion;
let url: string;
let device: Device;

const voiceNames = async (d: Device): Promise<string[]> => {
  const r = await api(url, 'GET', '/v1/app/voices', { device: d });
  expect(r.status).toBe(200);
  return r.json.voices.map((v: { name: string }) => v.name);
};

function asAdmin<T>(f: (admin: CompanionAdmin) => T): T {
  const admin = new CompanionAdmin(t.dataDir);
  try {
    return f(admin);
  } finally {
    admin.close();
  }
}

beforeAll(async () => {
  t = await startTestCompanion();
  url = t.server.url;
  device = newDevice(t.key);
});
afterAll(async () => {
  await t?.close();
});

describe('GET /voices cache', () => {
  it('a polling device sees a voice the administrator adds on its next poll', async () => {
    expect(await voiceNames(device)).toEqual([]);
    expect(await voiceNames(device)).toEqual([]); // now served from the cache
    asAdmin((a) => a.addWorkspaceVoice({ workspace: 'alpha', name: 'Late', design: 'a calm female voice' }));
    expect(await voiceNames(device)).toEqual(['Late']);
    asAdmin((a) => a.addWorkspaceVoice({ workspace: 'alpha', name: 'Later', design: 'a deep male voice' }));
    expect(await voiceNames(device)).toEqual(['Late', 'Later']);
    // another workspace's voice is not this device's
    asAdmin((a) => a.addWorkspaceVoice({ workspace: 'beta', name: 'Elsewhere', design: 'a deep male voice' }));
    expect(await voiceNames(device)).toEqual(['Late', 'Later']);
  });

  it('a cached device is refused on its next poll once disabled, and served again once enabled', async () => {
    expect(await voiceNames(device)).toEqual(['Late', 'Later']);
    asAdmin((a) => a.disableClient(device.clientId));
    expect(restError(await api(url, 'GET', '/v1/app/voices', { device }))).toEqual([404, 'CLIENT_NOT_ACTIVATED']);
    asAdmin((a) => a.enableClient(device.clientId));
    expect(await voiceNames(device)).toEqual(['Late', 'Later']);
  });

  it('many devices polling at once get the same list, each once enrolled', async () => {
    const fleet = Array.from({ length: 50 }, () => newDevice(t.key));
    const lists = await Promise.all(fleet.map((d) => voiceNames(d)));
    expect(new Set(lists.map((l) => l.join('|')))).toEqual(new Set(['Late|Later']));
    const again = await Promise.all(fleet.map((d) => voiceNames(d)));
    expect(again).toEqual(lists);
    const clients = asAdmin((a) => a.listClients('alpha'));
    expect(clients.filter((c) => fleet.some((d) => d.clientId === c.id)).every((c) => c.enrolled && c.status === 'active')).toBe(true);
    expect(clients.filter((c) => fleet.some((d) => d.clientId === c.id))).toHaveLength(50);
  });
});

import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { enroll } from '../../src/agent/enroll.js';
import { parseSettings } from '../../src/agent/settings.js';
import { TestAssistantPeer } from '../support/testAssistantPeer.js';

const KEY = 'ws-enroll';
let peer: TestAssistantPeer | undefined;
afterEach(async () => {
  await peer?.stop();
  peer = undefined;
});

describe('enroll', () => {
  it('creates the identity, is accepted (TOFU enrolls it), shows it again, and explains a rejection after a reset', async () => {
    peer = new TestAssistantPeer({ workspaceKey: KEY });
    await peer.start();
    const settings = parseSettings({ server: { url: peer.url, workspaceKey: KEY } });
    const stateDir = await mkdtemp(path.join(os.tmpdir(), 'enroll-'));

    const first = await enroll({ settings, stateDir });
    expect(first.created).toBe(true);
    expect(first.verdict).toBe('accepted');
    const text1 = first.lines.join('\n');
    expect(text1).toContain(first.identity.clientId);
    expect(text1).toContain(first.secretFingerprint);
    expect(text1).not.toContain(first.identity.clientSecret);

    const again = await enroll({ settings, stateDir });
    expect(again.created).toBe(false);
    expect(again.identity).toEqual(first.identity);
    expect(again.verdict).toBe('accepted');

    // A new secret for the same client id is what a lost identity looks like to the server.
    const reset = await enroll({ settings, stateDir, resetIdentity: true });
    expect(reset.created).toBe(true);
    expect(reset.verdict).toBe('accepted'); // a reset makes a new client id: enrolled anew
    expect(reset.identity.clientId).not.toBe(first.identity.clientId);
  });

  it('a rejected secret (401 secret_mismatch) is explained with trust on first use and the ways to recover', async () => {
    peer = new TestAssistantPeer({ workspaceKey: KEY });
    await peer.start();
    const settings = parseSettings({ server: { url: peer.url, workspaceKey: KEY } });
    const a = await mkdtemp(path.join(os.tmpdir(), 'enroll-'));
    const first = await enroll({ settings, stateDir: a });
    // Another device presenting the same client id with a different secret, e.g. a restored wrong backup:
    const { saveIdentity } = await import('../../src/agent/identity.js');
    const b = await mkdtemp(path.join(os.tmpdir(), 'enroll-'));
    await saveIdentity(b, { ...first.identity, clientSecret: 'z'.repeat(43) });
    const r = await enroll({ settings, stateDir: b });
    expect(r.verdict).toBe('rejected');
    expect(r.error).toMatchObject({ code: 'auth_rejected', status: 401, serverCode: 'secret_mismatch' });
    const text = r.lines.join('\n');
    expect(text).toMatch(/trust on first use/);
    expect(text).toMatch(/backup/);
    expect(text).toMatch(/admin/);
    expect(text).not.toContain('z'.repeat(43));
  });

  it('closed enrollment (404) and an unreachable server are reported, the identity kept', async () => {
    peer = new TestAssistantPeer({ workspaceKey: KEY, enrollment: 'closed' });
    await peer.start();
    const stateDir = await mkdtemp(path.join(os.tmpdir(), 'enroll-'));
    const r = await enroll({ settings: parseSettings({ server: { url: peer.url, workspaceKey: KEY } }), stateDir });
    expect(r.verdict).toBe('rejected');
    expect(r.error?.serverCode).toBe('client_not_found');
    const url = peer.url;
    await peer.stop();
    peer = undefined;
    const r2 = await enroll({ settings: parseSettings({ server: { url, workspaceKey: KEY } }), stateDir });
    expect(r2.verdict).toBe('unreachable');
    expect(r2.identity).toEqual(r.identity);
  });

  it('without a workspace key it says where to set it', async () => {
    const stateDir = await mkdtemp(path.join(os.tmpdir(), 'enroll-'));
    await expect(enroll({ settings: parseSettings({}), stateDir })).rejects.toMatchObject({ code: 'config_invalid' });
  });
});

// The clients repository against a real SQLite database: which writes change dbGeneration (the signal that
// drops the cached credentials and voice lists) and which deliberately do not.
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CompanionAdmin } from '../../../src/companion/admin.js';
import { getClient, insertClientIfAbsent, resetClientSecret, setClientStatus, touchClient } from '../../../src/companion/db/clients.js';
import { dbGeneration, stmt } from '../../../src/companion/db/database.js';
import { tempDataDir } from '../helpers.js';

let dataDir: string;
let admin: CompanionAdmin;
let workspaceId: string;

beforeEach(() => {
  dataDir = tempDataDir();
  admin = new CompanionAdmin(dataDir);
  workspaceId = admin.createWorkspace('w').workspace.id;
});
afterEach(() => {
  admin.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('clients repository', () => {
  it('touchClient records last_seen_at without changing dbGeneration (a fleet touches every minute)', () => {
    const id = randomUUID();
    insertClientIfAbsent(admin.db, id, workspaceId, 'a'.repeat(64));
    stmt(admin.db, 'UPDATE clients SET last_seen_at = ? WHERE id = ?').run('2000-01-01T00:00:00.000Z', id);
    const before = dbGeneration(admin.db);
    touchClient(admin.db, id);
    expect(getClient(admin.db, id)!.last_seen_at > '2000-01-01T00:00:00.000Z').toBe(true);
    expect(dbGeneration(admin.db)).toBe(before);
  });

  it('enrolment, status and secret changes do change dbGeneration', () => {
    const id = randomUUID();
    let g = dbGeneration(admin.db);
    const changed = () => {
      const now = dbGeneration(admin.db);
      const was = g;
      g = now;
      return now !== was;
    };
    expect(insertClientIfAbsent(admin.db, id, workspaceId, 'a'.repeat(64))).toBe(true);
    expect(changed()).toBe(true);
    expect(setClientStatus(admin.db, id, 'disabled')).toBe(true);
    expect(changed()).toBe(true);
    expect(resetClientSecret(admin.db, id)).toBe(true);
    expect(changed()).toBe(true);
    expect(changed()).toBe(false); // no write, no change
  });
});

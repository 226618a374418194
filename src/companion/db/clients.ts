// Clients (devices): enrolled by trust on first use; only the hash of their secret is kept.
import { noteWrite, nowIso, stmt, type Db } from './database.js';

export type ClientStatus = 'active' | 'disabled';

export interface ClientRow {
  id: string;
  workspace_id: string;
  secret_hash: string | null;
  status: ClientStatus;
  enrolled_at: string;
  last_seen_at: string;
}

export function getClient(db: Db, id: string): ClientRow | undefined {
  return stmt(db, 'SELECT * FROM clients WHERE id = ?').get(id) as ClientRow | undefined;
}

/** Inserts the client unless it exists; returns true when this call created it. Atomic: two simultaneous
 *  first requests cannot both enroll (the loser sees the winner's row and compares against it). */
export function insertClientIfAbsent(db: Db, id: string, workspaceId: string, secretHash: string): boolean {
  noteWrite();
  const now = nowIso();
  const r = stmt(db,
      `INSERT INTO clients (id, workspace_id, secret_hash, status, enrolled_at, last_seen_at)
       VALUES (?, ?, ?, 'active', ?, ?) ON CONFLICT(id) DO NOTHING`,
    )
    .run(id, workspaceId, secretHash, now, now);
  return r.changes === 1;
}

/** Enrolls a new secret for a client whose secret was reset; false when another request got there first. */
export function enrollResetClient(db: Db, id: string, secretHash: string): boolean {
  noteWrite();
  const now = nowIso();
  const r = stmt(db, 'UPDATE clients SET secret_hash = ?, enrolled_at = ?, last_seen_at = ? WHERE id = ? AND secret_hash IS NULL')
    .run(secretHash, now, now, id);
  return r.changes === 1;
}

/** Records that the client was seen. Deliberately no noteWrite(): last_seen_at is read by no cached path, and a
 *  fleet touches every minute per device, which would drop every device's cached credentials and voice list
 *  several times a second (each touch is a write) for nothing. */
export function touchClient(db: Db, id: string): void {
  stmt(db, 'UPDATE clients SET last_seen_at = ? WHERE id = ?').run(nowIso(), id);
}

export function setClientStatus(db: Db, id: string, status: ClientStatus): boolean {
  noteWrite();
  return stmt(db, 'UPDATE clients SET status = ? WHERE id = ?').run(status, id).changes === 1;
}

/** Forgets the enrolled secret so the device can enroll a new one (recovery for a lost secret). */
export function resetClientSecret(db: Db, id: string): boolean {
  noteWrite();
  return stmt(db, 'UPDATE clients SET secret_hash = NULL WHERE id = ?').run(id).changes === 1;
}

export function listClients(db: Db, workspaceId?: string): ClientRow[] {
  return workspaceId
    ? (stmt(db, 'SELECT * FROM clients WHERE workspace_id = ? ORDER BY enrolled_at').all(workspaceId) as ClientRow[])
    : (stmt(db, 'SELECT * FROM clients ORDER BY workspace_id, enrolled_at').all() as ClientRow[]);
}

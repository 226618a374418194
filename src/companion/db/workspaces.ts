// Workspaces: a name and the hash of its API key (X-Workspace-Key).
import { randomUUID } from 'node:crypto';
import { noteWrite, nowIso, stmt, type Db } from './database.js';

export interface WorkspaceRow {
  id: string;
  name: string;
  key_hash: string;
  created_at: string;
}

export function createWorkspace(db: Db, name: string, keyHash: string, id: string = randomUUID()): WorkspaceRow {
  noteWrite();
  const row: WorkspaceRow = { id, name, key_hash: keyHash, created_at: nowIso() };
  stmt(db, 'INSERT INTO workspaces (id, name, key_hash, created_at) VALUES (@id, @name, @key_hash, @created_at)').run(row);
  return row;
}

export function findWorkspaceByKeyHash(db: Db, keyHash: string): WorkspaceRow | undefined {
  return stmt(db, 'SELECT * FROM workspaces WHERE key_hash = ?').get(keyHash) as WorkspaceRow | undefined;
}

export function getWorkspace(db: Db, id: string): WorkspaceRow | undefined {
  return stmt(db, 'SELECT * FROM workspaces WHERE id = ?').get(id) as WorkspaceRow | undefined;
}

export function findWorkspaceByName(db: Db, name: string): WorkspaceRow | undefined {
  return stmt(db, 'SELECT * FROM workspaces WHERE name = ? ORDER BY created_at LIMIT 1').get(name) as WorkspaceRow | undefined;
}

export function listWorkspaces(db: Db): WorkspaceRow[] {
  return stmt(db, 'SELECT * FROM workspaces ORDER BY created_at, name').all() as WorkspaceRow[];
}

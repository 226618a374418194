// The companion's embedded store: one SQLite file (sqlite.ts: node:sqlite or better-sqlite3) in the data directory. WAL so readers never
// wait for a writer, foreign keys on, a busy timeout so a CLI admin command and the server can share the file.
// Every schema change is one entry in MIGRATIONS, applied in order inside a transaction and recorded in
// PRAGMA user_version, so an old database upgrades itself at start and a half-applied migration cannot exist.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { openSqlite, type Db, type Statement } from './sqlite.js';
import { CodedError, type CodedErrorOptions } from '../../common/errors.js';

export type { Db } from './sqlite.js';

export const DB_FILE = 'companion.sqlite';

const MIGRATIONS: readonly string[] = [
  // 1: initial schema
  `
  CREATE TABLE workspaces (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    key_hash    TEXT NOT NULL UNIQUE,       -- SHA-256 hex of the workspace key; the key itself is never stored
    created_at  TEXT NOT NULL
  );
  CREATE TABLE clients (
    id            TEXT PRIMARY KEY,         -- the device's X-Client-Id (UUID, lower case); one workspace per client
    workspace_id  TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    secret_hash   TEXT,                     -- SHA-256 hex of the enrolled secret; NULL after an admin reset
    status        TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    enrolled_at   TEXT NOT NULL,
    last_seen_at  TEXT NOT NULL
  );
  CREATE INDEX clients_workspace ON clients(workspace_id);
  CREATE TABLE voices (
    id                       TEXT PRIMARY KEY,
    workspace_id             TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    name                     TEXT NOT NULL,
    category                 TEXT NOT NULL CHECK (category IN ('cloned', 'workspace')),
    created_by_client        TEXT,          -- the cloning client (category cloned); NULL for workspace voices
    status                   TEXT NOT NULL DEFAULT 'ready',
    description              TEXT NOT NULL DEFAULT '',
    language                 TEXT NOT NULL DEFAULT 'en-us',
    params_json              TEXT NOT NULL, -- VoiceParams of the offline synthesiser
    design_prompt            TEXT,
    reference_text           TEXT,          -- transcript of the reference audio (for the adapter)
    adapter_profile_id       TEXT,          -- id of the profile registered with the TTS adapter
    voice_clone_prompt_path  TEXT,          -- designed voices: prompt file a neural adapter may use
    reference_audio_path     TEXT,          -- relative to the audio directory
    created_at               TEXT NOT NULL
  );
  CREATE INDEX voices_workspace ON voices(workspace_id, created_at);
  CREATE TABLE stories (
    id                        TEXT PRIMARY KEY,
    workspace_id              TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    slug                      TEXT,
    name                      TEXT NOT NULL,
    transcript                TEXT NOT NULL,
    excerpt                   TEXT,
    age_group                 TEXT,
    illustration_url          TEXT,
    illustration_alt          TEXT,
    sort_order                INTEGER NOT NULL DEFAULT 0,
    default_voice_profile_id  TEXT REFERENCES voices(id) ON DELETE SET NULL,
    created_at                TEXT NOT NULL,
    UNIQUE (workspace_id, slug)
  );
  `,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

export class DatabaseError extends CodedError<'DATABASE_ERROR'> {
  override name = 'DatabaseError';
  constructor(message: string, opts?: CodedErrorOptions) {
    super('DATABASE_ERROR', message, opts);
  }
}

/** Opens (creating if needed) <dataDir>/companion.sqlite and brings its schema up to date. */
export function openDatabase(dataDir: string): Db {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, DB_FILE);
  let db: Db;
  try {
    db = openSqlite(file);
  } catch (err) {
    throw new DatabaseError(`cannot open the database ${file}: ${(err as Error).message}`, { cause: err });
  }
  try {
    db.exec('PRAGMA busy_timeout = 5000');
    db.prepare('PRAGMA journal_mode = WAL').get(); // answers with a row: run through a statement
    db.exec('PRAGMA foreign_keys = ON');
    db.exec('PRAGMA synchronous = NORMAL'); // with WAL: durable at checkpoints, never corrupt
    migrate(db);
  } catch (err) {
    db.close();
    throw new DatabaseError(`cannot prepare the database ${file}: ${(err as Error).message}`, { cause: err });
  }
  return db;
}

export function migrate(db: Db): void {
  const current = (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version;
  if (current > MIGRATIONS.length) {
    throw new DatabaseError(`database schema version ${current} is newer than this program (${MIGRATIONS.length}); upgrade speaker-agent`);
  }
  for (let v = current; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]);
      db.exec(`PRAGMA user_version = ${v + 1}`);
    }, 'immediate');
  }
}

export function nowIso(): string {
  return new Date().toISOString();
}

let localWrites = 0;

/** Every write through the repository modules calls this (see dbGeneration), except writes of fields no
 *  cached read path depends on (touchClient's last_seen_at). */
export function noteWrite(): void {
  localWrites++;
}

/** Changes whenever the database may have changed: a write through this process's repositories, or any commit
 *  by another connection (SQLite's data_version, e.g. an admin command in another process). Lets hot read paths
 *  cache what they read. */
export function dbGeneration(db: Db): string {
  return `${(stmt(db, 'PRAGMA data_version').get() as { data_version: number }).data_version}:${localWrites}`;
}

const statements = new WeakMap<Db, Map<string, Statement>>();

/** A prepared statement, compiled once per connection (preparing costs more than running on hot paths). */
export function stmt(db: Db, sql: string): Statement {
  let m = statements.get(db);
  if (!m) statements.set(db, (m = new Map()));
  let s = m.get(sql);
  if (!s) m.set(sql, (s = db.prepare(sql)));
  return s;
}

// The SQLite layer under the companion's store, on each driver this Node can run (node:sqlite from Node 22,
// better-sqlite3 below Node 24): the same transactions, pragmas and rows on both, and the driver chosen per Node.
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, SCHEMA_VERSION } from '../../../src/companion/db/database.js';
import { openSqlite, sqliteDriverFor, type Db, type SqliteDriver } from '../../../src/companion/db/sqlite.js';
import { runTs } from '../../support/childProcess.js';

const major = Number(process.versions.node.split('.')[0]);
const available: SqliteDriver[] = [];
try {
  createRequire(import.meta.url)('node:sqlite');
  available.push('node:sqlite');
} catch {
  /* Node 20 */
}
if (major < 24) available.push('better-sqlite3');

const dirs: string[] = [];
const dbs: Db[] = [];
function fresh(driver: SqliteDriver): Db {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sqlite-'));
  dirs.push(dir);
  const db = openSqlite(path.join(dir, 'x.sqlite'), driver);
  dbs.push(db);
  db.exec('CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)');
  return db;
}
const rows = (db: Db) => db.prepare('SELECT a, b FROM t ORDER BY a').all().map((r) => ({ ...(r as { a: number; b: string | null }) }));

afterEach(() => {
  for (const db of dbs.splice(0)) if (db.open) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the driver per Node', () => {
  it('node:sqlite from Node 24 (better-sqlite3 12 aborts there), better-sqlite3 on 20 and 22', () => {
    expect(sqliteDriverFor('20.20.2')).toBe('better-sqlite3');
    expect(sqliteDriverFor('22.23.3')).toBe('better-sqlite3');
    expect(sqliteDriverFor('24.19.0')).toBe('node:sqlite');
    expect(sqliteDriverFor('26.10.0')).toBe('node:sqlite');
    expect(available).toContain(sqliteDriverFor());
  });
});

describe.each(available)('%s', (driver) => {
  it('runs statements: changes counted, rows read back as plain values', () => {
    const db = fresh(driver);
    const ins = db.prepare('INSERT INTO t (a, b) VALUES (?, ?)');
    expect(ins.run(1, 'x').changes).toBe(1);
    expect(ins.run(2, null).changes).toBe(1);
    expect(db.prepare('UPDATE t SET b = ? WHERE a > ?').run('y', 0).changes).toBe(2);
    expect({ ...(db.prepare('SELECT b FROM t WHERE a = ?').get(2) as object) }).toEqual({ b: 'y' });
    expect(db.prepare('SELECT b FROM t WHERE a = ?').get(99)).toBeUndefined();
    expect(rows(db)).toEqual([{ a: 1, b: 'y' }, { a: 2, b: 'y' }]);
  });

  it('a transaction commits, and rolls back everything when it throws', () => {
    const db = fresh(driver);
    db.transaction(() => db.prepare('INSERT INTO t VALUES (1, ?)').run('kept'));
    expect(() =>
      db.transaction(() => {
        db.prepare('INSERT INTO t VALUES (2, ?)').run('lost');
        throw new Error('boom');
      }, 'immediate'),
    ).toThrow('boom');
    expect(rows(db)).toEqual([{ a: 1, b: 'kept' }]);
  });

  it('transactions nest: an inner failure undoes only the inner part, an outer one undoes all', () => {
    const db = fresh(driver);
    const out = db.transaction(() => {
      db.prepare('INSERT INTO t VALUES (1, ?)').run('outer');
      expect(() =>
        db.transaction(() => {
          db.prepare('INSERT INTO t VALUES (2, ?)').run('inner');
          throw new Error('inner');
        }),
      ).toThrow('inner');
      db.transaction(() => db.prepare('INSERT INTO t VALUES (3, ?)').run('inner ok'));
      return 'done';
    });
    expect(out).toBe('done');
    expect(rows(db)).toEqual([{ a: 1, b: 'outer' }, { a: 3, b: 'inner ok' }]);
    expect(() =>
      db.transaction(() => {
        db.prepare('INSERT INTO t VALUES (4, ?)').run('x');
        db.transaction(() => db.prepare('INSERT INTO t VALUES (5, ?)').run('y'));
        throw new Error('outer');
      }),
    ).toThrow('outer');
    expect(rows(db).map((r) => r.a)).toEqual([1, 3]);
    // and the connection is usable afterwards (no transaction left open)
    db.transaction(() => db.prepare('INSERT INTO t VALUES (6, ?)').run('z'), 'immediate');
    expect(rows(db).map((r) => r.a)).toEqual([1, 3, 6]);
  });

  it('a constraint error is a thrown error, not a crash', () => {
    const db = fresh(driver);
    db.prepare('INSERT INTO t VALUES (1, ?)').run('a');
    expect(() => db.prepare('INSERT INTO t VALUES (1, ?)').run('b')).toThrow(/UNIQUE/);
    expect(() => db.prepare('SELEC nonsense')).toThrow(/syntax/);
  });
});

describe('the companion store on this Node', () => {
  it('opens with WAL, foreign keys, a busy timeout and the current schema', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'store-'));
    dirs.push(dir);
    const db = openDatabase(dir);
    dbs.push(db);
    expect(db.driver).toBe(sqliteDriverFor());
    const pragma = (name: string) => Object.values(db.prepare(`PRAGMA ${name}`).get() as object)[0];
    expect(pragma('journal_mode')).toBe('wal');
    expect(pragma('foreign_keys')).toBe(1);
    expect(pragma('busy_timeout')).toBe(5000);
    expect(pragma('user_version')).toBe(SCHEMA_VERSION);
    expect(() => db.prepare("INSERT INTO clients (id, workspace_id, enrolled_at, last_seen_at) VALUES ('c', 'nope', '', '')").run()).toThrow(/FOREIGN KEY/);
  });

  // Regression: better-sqlite3 12 on Node >= 24.19 aborted the whole process ("Assertion failed: (env) !=
  // nullptr" in Statement::~Statement) when statements were collected outside a JavaScript context.
  it('statements dropped by the thousand in the main thread and a worker do not abort the process', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'stress-'));
    dirs.push(dir);
    const r = await runTs(path.join(import.meta.dirname, '../../support/sqliteStress.ts'), [dir]);
    expect(r.stderr).not.toMatch(/Assertion failed/);
    expect({ code: r.code, signal: r.signal }).toEqual({ code: 0, signal: null });
    expect(r.stdout).toContain(`worker exited 0; driver ${sqliteDriverFor()}`);
  }, 60_000);
});

// The one SQLite connection type the companion uses, over one of two drivers chosen by the running Node:
//   - node:sqlite (built into Node) from Node 24 on. It needs no native addon, and better-sqlite3 12 cannot run
//     there: from Node 24.19 its Statement destructor (node::ObjectWrap, compiled from Node's headers) aborts the
//     process with "Assertion failed: (env) != nullptr" when V8 collects a statement outside a JavaScript context
//     (nodejs/node#65446); `npm start` died that way mid-run 3 times in 6 on 24.21.
//   - better-sqlite3 12 on Node 20 and 22, where node:sqlite is missing (20) or still warns as experimental (22).
//     better-sqlite3 13 (Node-API, no such abort) needs Node 22 and crashes on 20, so one lockfile cannot serve
//     every supported Node with it alone.
// The interface is the small part of better-sqlite3's API the repositories use; transactions nest (savepoints)
// the way better-sqlite3's do.
import { createRequire } from 'node:module';
import { addonLoadProblem } from '../../common/addonAdvice.js';

export interface RunResult {
  changes: number;
}

export interface Statement {
  run(...params: unknown[]): RunResult;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

export type SqliteDriver = 'node:sqlite' | 'better-sqlite3';

export interface Db {
  readonly driver: SqliteDriver;
  prepare(sql: string): Statement;
  exec(sql: string): void;
  /** Runs fn inside a transaction (a savepoint when one is already open); rolls back when fn throws. IMMEDIATE
   *  takes the write lock at once, so a read-then-write cannot fail on a busy database halfway. */
  transaction<T>(fn: () => T, mode?: 'deferred' | 'immediate'): T;
  close(): void;
  readonly open: boolean;
}

/** The driver this Node runs the companion's store on (see the top of this file). */
export function sqliteDriverFor(nodeVersion: string = process.versions.node): SqliteDriver {
  return Number(nodeVersion.split('.')[0]) >= 24 ? 'node:sqlite' : 'better-sqlite3';
}

const require = createRequire(import.meta.url);

export function openSqlite(file: string, driver: SqliteDriver = sqliteDriverFor()): Db {
  return driver === 'node:sqlite' ? openNodeSqlite(file) : openBetterSqlite(file);
}

// --- node:sqlite ---------------------------------------------------------------------------------------------

interface NodeStatementSync {
  run(...params: unknown[]): { changes: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}
interface NodeDatabaseSync {
  prepare(sql: string): NodeStatementSync;
  exec(sql: string): void;
  close(): void;
  readonly isOpen: boolean;
}

function openNodeSqlite(file: string): Db {
  let mod: { DatabaseSync: new (file: string) => NodeDatabaseSync };
  try {
    mod = require('node:sqlite');
  } catch (err) {
    throw new Error(`node:sqlite is not available in Node ${process.versions.node}`, { cause: err });
  }
  const db = new mod.DatabaseSync(file);
  let depth = 0;
  return {
    driver: 'node:sqlite',
    prepare(sql) {
      const s = db.prepare(sql);
      return {
        run: (...p) => ({ changes: Number(s.run(...p).changes) }),
        // Rows come with a null prototype; the repositories (and JSON) treat them like plain objects.
        get: (...p) => s.get(...p),
        all: (...p) => s.all(...p),
      };
    },
    exec: (sql) => db.exec(sql),
    transaction(fn, mode = 'deferred') {
      const sp = `sp${depth}`;
      db.exec(depth === 0 ? `BEGIN ${mode === 'immediate' ? 'IMMEDIATE' : 'DEFERRED'}` : `SAVEPOINT ${sp}`);
      depth++;
      try {
        const out = fn();
        depth--;
        db.exec(depth === 0 ? 'COMMIT' : `RELEASE ${sp}`);
        return out;
      } catch (err) {
        depth--;
        // A failed COMMIT may already have ended the transaction; ROLLBACK then has nothing to undo.
        try {
          db.exec(depth === 0 ? 'ROLLBACK' : `ROLLBACK TO ${sp}; RELEASE ${sp}`);
        } catch {
          /* nothing open */
        }
        throw err;
      }
    },
    close: () => db.close(),
    get open() {
      return db.isOpen;
    },
  };
}

// --- better-sqlite3 ------------------------------------------------------------------------------------------

interface BetterStatement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}
interface BetterTransaction<T> {
  (): T;
  immediate(): T;
}
interface BetterDatabase {
  prepare(sql: string): BetterStatement;
  exec(sql: string): void;
  transaction<T>(fn: () => T): BetterTransaction<T>;
  close(): void;
  readonly open: boolean;
}

function openBetterSqlite(file: string): Db {
  let Database: new (file: string) => BetterDatabase;
  try {
    Database = require('better-sqlite3');
  } catch (err) {
    throw new Error(addonLoadProblem('better-sqlite3', err), { cause: err });
  }
  let db: BetterDatabase;
  try {
    db = new Database(file);
  } catch (err) {
    // better-sqlite3 loads its binary here, not at require: a Node upgraded under the install fails at this line
    // ("NODE_MODULE_VERSION 115 ... requires 127" and its own advice, `npm rebuild`)
    if (/NODE_MODULE_VERSION|ERR_DLOPEN_FAILED|\.node\b|could not locate the bindings/i.test(`${(err as Error).message} ${(err as { code?: string }).code ?? ''}`)) {
      throw new Error(addonLoadProblem('better-sqlite3', err), { cause: err });
    }
    throw err;
  }
  return {
    driver: 'better-sqlite3',
    prepare: (sql) => db.prepare(sql),
    exec: (sql) => db.exec(sql),
    transaction(fn, mode = 'deferred') {
      const t = db.transaction(fn);
      return mode === 'immediate' ? t.immediate() : t();
    },
    close: () => db.close(),
    get open() {
      return db.open;
    },
  };
}

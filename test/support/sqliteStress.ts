// usage: tsx sqliteStress.ts <dataDir>
// Opens the companion's store the way the server does (openDatabase: the driver this Node uses), in the main
// thread and in a worker thread, prepares and drops thousands of statements in both, and exits. On Node >= 24.19
// better-sqlite3 12 aborted here ("Assertion failed: (env) != nullptr", Statement::~Statement) when V8 collected
// the dropped statements outside a JavaScript context: in the worker's teardown at the latest.
import { isMainThread, workerData } from 'node:worker_threads';
import { openDatabase } from '../../src/companion/db/database.js';
import { startWorkerThread, workerThreadData } from '../../src/common/workerThread.js';

const dir: string = isMainThread ? process.argv[2] : workerThreadData<{ dir: string }>(workerData).dir;
const db = openDatabase(dir);
for (let i = 0; i < 20_000; i++) db.prepare(`SELECT ${i} AS n, count(*) AS c FROM workspaces`).get();
(globalThis as { kept?: unknown }).kept = db.prepare('SELECT 1'); // one still alive at exit
if (isMainThread) {
  const w = startWorkerThread(import.meta.url, 'sqliteStress', { dir });
  w.on('exit', (code) => {
    console.log(`worker exited ${code}; driver ${db.driver}`);
    for (let i = 0; i < 20_000; i++) db.prepare(`SELECT ${i} AS m`).get();
  });
}

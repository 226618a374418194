// Child process for the interrupted-write tests: starts replacing a file atomically and is killed (SIGKILL,
// a real crash) after the temp file is written and fsynced but before the rename.
// usage: tsx crashingIdentityWriter.ts <target> <new content>
import { writeFileAtomic } from '../../src/common/atomicFile.js';

const [target, content] = process.argv.slice(2);
await writeFileAtomic(target, content, {
  beforeRename: (temp) => {
    process.stdout.write(`temp ${temp}\n`);
    process.kill(process.pid, 'SIGKILL');
  },
});
process.stdout.write('not reached\n');

// exitNow (src/common/exitNow.ts): the daemon's last step. A process leaving while a worker thread is inside a
// native call must end with its own exit code, not an abort: node's exit terminates the thread there, and in ONNX
// Runtime that aborted the speaker at `systemctl stop` (check-systemd-vm.sh). A real worker in real koffi calls:
// with process.exit in its place, 3 of 5 runs died of SIGABRT on Node 20.20.2 (none of 5 on Node 26.10).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

describe('exitNow', () => {
  it('leaves with the code given while a worker thread is in the middle of native calls, every time', () => {
    for (let i = 0; i < 8; i++) {
      const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, '../support/exitNowMain.ts')], { encoding: 'utf8', timeout: 60_000 });
      expect({ status: r.status, signal: r.signal }, r.stderr).toEqual({ status: 7, signal: null });
    }
  }, 120_000);
});

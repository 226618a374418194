// Leaves the process once the daemon has closed everything it owns, without node's own teardown. At exit node
// terminates any worker thread still running, and one terminated inside a native call of ONNX Runtime (the wake
// word thread still loading its models: minutes in an emulated machine, seconds on a slow board) aborts the whole
// process ("terminate called after throwing an instance of 'Napi::Error'"): `systemctl stop` then ended in SIGABRT
// and the unit was marked failed (scripts/check-systemd-vm.sh). _exit(2) ends every thread at once, with the code.
// Nothing is lost: the logs are written synchronously (pino; stdout is a pipe or a file), C's stdio buffers are
// flushed first, and the call, the sound card, the status socket and any local companion are closed before this.
export async function exitNow(code: number): Promise<never> {
  try {
    const koffi = (await import('koffi')).default;
    const libc = koffi.load('libc.so.6');
    const fflush = libc.func('int fflush(void *stream)') as (stream: null) => number;
    const exit = libc.func('void _exit(int status)') as (status: number) => void;
    fflush(null); // what native code printed through C's stdio (buffered on a pipe), which exit() would flush
    exit(code);
  } catch {
    // no koffi or no glibc here: node's own exit
  }
  process.exit(code);
}

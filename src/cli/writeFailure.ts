// Why a disk refused a write, in words. A full or failing SD card is common on a speaker, and node's own message
// ("ENOSPC: no space left on device, write") names neither the file nor what was left undone.

const WRITE_FAILURES: Record<string, string> = {
  ENOSPC: 'no space left on device (df -h shows it; free some space)',
  EDQUOT: 'disk quota exceeded',
  EROFS: 'read-only file system (the kernel remounts an SD card read-only after errors)',
  EIO: 'input/output error (a failing SD card?)',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
};

/** The reason in words for a refused write, or undefined for an error that is not one (it then passes through).
 *  `sudoHint` is appended to a permission refusal: the command to run instead. */
export function writeFailureReason(err: unknown, sudoHint?: string): string | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code !== 'string' || !Object.hasOwn(WRITE_FAILURES, code)) return undefined;
  const reason = WRITE_FAILURES[code];
  return sudoHint && (code === 'EACCES' || code === 'EPERM') ? `${reason} (on an installed speaker: ${sudoHint})` : reason;
}

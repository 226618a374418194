/** A copy of fd (close-on-exec, numbered 3 or above); throws an Error with code EBADF/EMFILE/... */
export function dup(fd: number): number;
/** Makes `to` refer to what `from` refers to; throws an Error with code EBADF/... */
export function dup2(from: number, to: number): void;
/** Sends one AF_UNIX datagram without blocking (sd_notify). 0, or -errno when it was not sent. */
export function sendDatagram(addr: Buffer, addrLen: number, message: Buffer): number;
/** glibc's malloc_trim(0): returns free memory inside malloc's arenas to the kernel; true when some was. */
export function mallocTrim(): boolean;
/** V8's "moderate" memory-pressure notification: starts an incremental mark-compact that shrinks the heap.
 *  Undefined when this node's V8 lacks the call (a separate addon, see src/v8_memory.cc). */
export const memoryPressure: (() => void) | undefined;

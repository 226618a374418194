/** A copy of fd (close-on-exec, numbered 3 or above); throws an Error with code EBADF/EMFILE/... */
export function dup(fd: number): number;
/** Makes `to` refer to what `from` refers to; throws an Error with code EBADF/... */
export function dup2(from: number, to: number): void;
/** Sends one AF_UNIX datagram without blocking (sd_notify). 0, or -errno when it was not sent. */
export function sendDatagram(addr: Buffer, addrLen: number, message: Buffer): number;
/** glibc's malloc_trim(0): returns free memory inside malloc's arenas to the kernel; true when some was. */
export function mallocTrim(): boolean;
/** Every read-only file mapping without copied-on-write pages (code and constants of node and its libraries):
 *  its resident pages go back to the kernel (madvise MADV_DONTNEED, then the files' pages no process maps leave the
 *  page cache) and fault in again, page by page (MADV_RANDOM), when used. Bytes of mappings advised, or -errno
 *  (/proc/self/smaps unreadable). */
export function pageOutFileMappings(): number;
/** After pageOutFileMappings: how many of those mappings fault back one page at a time instead of the 64 KB around
 *  each fault (registered with userfaultfd, write-protect, WP_ASYNC: Linux 6.7), or -errno why none (EINVAL: an
 *  older kernel; EPERM: userfaultfd not allowed). 0 before the page-out. Absent in a build before it. */
export const faultAroundOff: (() => number) | undefined;
/** Makes speaker-sys alsa-lib's error handler (alsa-lib found with dlopen): "(snd_pcm_recover) underrun/overrun
 *  occurred" is counted, and printed on stderr only with printThem; every other message is printed as alsa-lib
 *  prints it. False when alsa-lib is not there. Calling it again only changes printThem. */
export function captureAlsaXruns(printThem: boolean): boolean;
/** The xruns the handler counted: underruns (playback ran dry), overruns (capture ran over). */
export function alsaXruns(): { underruns: number; overruns: number };
/** V8's "moderate" memory-pressure notification: starts an incremental mark-compact that shrinks the heap.
 *  Undefined when this node's V8 lacks the call (a separate addon, see src/v8_memory.cc). */
export const memoryPressure: (() => void) | undefined;
/** An AES-128-GCM key, scheduled once (src/srtp_gcm.c). */
export interface GcmContext {
  readonly __gcmContext: unique symbol;
}
/** AES-128-GCM for SRTP (RFC 7714) with node's own OpenSSL, one call per packet. Undefined when this node does not
 *  export OpenSSL to addons (a separate addon, see src/srtp_gcm.c). Bad arguments are TypeError or RangeError. */
export const srtpGcm:
  | {
      /** A context for a 16-byte key. */
      gcmContext(key: Buffer): GcmContext;
      /** aad || ciphertext || 16-byte tag; iv is 12 bytes. */
      gcmSeal(ctx: GcmContext, iv: Buffer, aad: Buffer, plaintext: Buffer): Buffer;
      /** packet = aad (aadLength bytes) || ciphertext || tag: aad || plaintext, or null when it does not authenticate. */
      gcmOpen(ctx: GcmContext, iv: Buffer, packet: Buffer, aadLength: number): Buffer | null;
    }
  | undefined;
/** build/Release/node_preload.so: not an addon but a library the systemd units preload into node (LD_PRELOAD):
 *  it turns abseil's debug-only deadlock detection off before node's first lock, which Node 24+ otherwise pays 1 MB
 *  for (src/node_preload.c). Does nothing in a node without abseil. */
export const nodePreloadPath: string;

// Whether the machine's wall clock has been set from the network yet, for the clock the assistant reads out. A
// Raspberry Pi has no real-time clock: it boots at the time it last saved (fake-hwclock) or at 1970, and keeps that
// until NTP answers, which after a power cut with the router still down can take minutes or never come. "What time
// is it" then got a wrong time said with confidence; now the assistant says it does not know yet.
//
// Two readings, as systemd's own `timedatectl` and `systemd-time-wait-sync` make them:
// - the kernel's: adjtimex(2) with nothing to change reports the clock's maximum error, which any NTP client that
//   disciplines the kernel (systemd-timesyncd, chrony, ntpd) brings under 16 s (systemd's ntp_synced());
// - systemd-timesyncd's flag file, touched at each synchronisation, in the runtime directory it makes at start.
// The clock counts as not yet set only when timesyncd is present and has not synchronised and the kernel agrees: a
// machine with no NTP client we know of (a container, a VM whose clock comes from its host) is taken at its word.
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The kernel's estimate of the clock's maximum error in microseconds, or undefined where it cannot be read. */
export type KernelClockError = () => Promise<number | undefined>;

/** systemd's threshold (src/basic/time-util.c, ntp_synced): the kernel reports 16 s while no NTP client set it. */
const UNSYNCED_MAX_ERROR_US = 16_000_000;
const TIMESYNCD_DIR = '/run/systemd/timesync';

let adjtimex: ((buf: Buffer) => number) | null | undefined;
/** C's long on this ABI (struct timex's fields), from koffi */
let longSize = 8;

/** adjtimex(2) through libc (koffi), read-only (modes 0): struct timex's maxerror, after modes and offset and freq. */
export const kernelClockMaxError: KernelClockError = async () => {
  if (adjtimex === undefined) {
    try {
      const koffi = (await import('koffi')).default; // loaded when first asked: the companion needs it for nothing else here
      adjtimex = koffi.load('libc.so.6').func('int adjtimex(_Inout_ uint8_t *buf)') as (buf: Buffer) => number;
      longSize = koffi.sizeof('long');
    } catch {
      adjtimex = null; // no koffi or no glibc: unknown
    }
  }
  if (!adjtimex) return undefined;
  const buf = Buffer.alloc(512); // larger than struct timex on every ABI (208 bytes on 64-bit Linux)
  if (adjtimex(buf) < 0) return undefined;
  // struct timex: int modes, then longs (offset, freq, maxerror); where a long is 8 bytes `modes` is padded to 8.
  // The exported `adjtimex` is glibc's own ABI on 32-bit boards too (4-byte longs), whatever time_t the distribution
  // builds with (Debian armhf's 64-bit time_t renames the header's call, not this symbol).
  const le = os.endianness() === 'LE';
  if (longSize === 8) return Number(le ? buf.readBigInt64LE(24) : buf.readBigInt64BE(24));
  return le ? buf.readInt32LE(12) : buf.readInt32BE(12);
};

export interface WallClock {
  now(): Date;
  /** false while the machine's clock is known not to have been set from the network yet */
  isSet(): Promise<boolean>;
}

/** The machine's clock; `timesyncDir` and `kernelMaxError` are where the two readings come from (tests point them). */
export function systemWallClock(
  opts: { timesyncDir?: string; kernelMaxError?: KernelClockError; now?: () => Date } = {},
): WallClock {
  const dir = opts.timesyncDir ?? TIMESYNCD_DIR;
  const kernel = opts.kernelMaxError ?? kernelClockMaxError;
  return {
    now: opts.now ?? (() => new Date()),
    isSet: async () => {
      if (!existsSync(dir) || existsSync(path.join(dir, 'synchronized'))) return true;
      const maxError = await kernel();
      return maxError === undefined || maxError < UNSYNCED_MAX_ERROR_US;
    },
  };
}

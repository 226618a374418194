// A TLS failure that is really the clock's. A board without a real-time clock boots with fake-hwclock's last
// saved time (days or months old) until NTP syncs; a server certificate renewed meanwhile is then "not yet
// valid", and OpenSSL's code says nothing of the clock: the user looked for a network fault.

import { codeAmongCauses } from './errors.js';

const CLOCK_CODES: Record<string, 'not yet valid' | 'expired'> = {
  CERT_NOT_YET_VALID: 'not yet valid',
  CERT_HAS_EXPIRED: 'expired',
};

/** The certificate-time code of a failed request (node's errors carry it on the error or a cause), or undefined. */
export function certificateClockCode(err: unknown): string | undefined {
  return codeAmongCauses(err, (code) => Object.hasOwn(CLOCK_CODES, code));
}

/** Words for a certificate-time failure, naming this machine's time; undefined when `err` is not one. */
export function certificateClockProblem(err: unknown, now = new Date()): string | undefined {
  const code = certificateClockCode(err);
  if (!code) return undefined;
  const state = CLOCK_CODES[code]!;
  const unless = state === 'expired' ? " (if the clock is right, the server's certificate has expired)" : '';
  return `the server's certificate is ${state} by this machine's clock, ${now.toISOString()}${unless}: is the clock wrong? A board without a real-time clock keeps an old time until NTP syncs (timedatectl; NTP needs UDP port 123)`;
}

// The DTLS certificate of a WebRTC call (ECDSA P-256, self-signed), made with Node's own crypto.
//
// Why not werift's: werift makes it with @peculiar/x509 over WebCrypto, a certificate stack (x509, asn1js, the
// @peculiar/asn1-* schemas, tsyringe) of ~450 KB of JavaScript that stays in the heap of a process that uses it
// once. A self-signed certificate is a few fields of DER; Node signs it in well under a millisecond. Both sides
// pass the result to werift as `dtls.keys`, and the production bundle replaces @peculiar/x509 with a stub
// (scripts/build.mjs) so the stack is never loaded. WebRTC peers check the certificate only against the
// fingerprint in the SDP (RFC 8122), so nothing more than a valid signature and validity period is needed.
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { HashAlgorithm, SignatureAlgorithm, type DtlsKeys } from 'werift';

/** How long a certificate is valid; a process older than that makes a new one (like a browser, 30 days). */
export const CERTIFICATE_LIFETIME_MS = 30 * 24 * 3600_000;
/** Renewed this long before it expires, so a call set up near the end never presents an expired certificate. */
const RENEW_BEFORE_MS = 24 * 3600_000;
/** notBefore is back-dated so a peer whose clock is a little behind does not see a certificate from the future. */
const BACKDATE_MS = 3600_000;

export interface DtlsCertificate {
  keys: DtlsKeys;
  notBefore: Date;
  notAfter: Date;
}

/** A new self-signed certificate and its key (PEM), valid from an hour ago for CERTIFICATE_LIFETIME_MS. */
export function createDtlsCertificate(now = new Date(), commonName = 'speaker-agent'): DtlsCertificate {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const notBefore = new Date(now.getTime() - BACKDATE_MS);
  const notAfter = new Date(now.getTime() + CERTIFICATE_LIFETIME_MS);
  const name = seq(set(seq(oid(OID_COMMON_NAME), tlv(0x0c, Buffer.from(commonName, 'utf8')))));
  const tbs = seq(
    tlv(0xa0, integer(Buffer.from([2]))), // [0] EXPLICIT version: v3
    integer(serialNumber()),
    seq(oid(OID_ECDSA_WITH_SHA256)),
    name, // issuer = subject: self-signed
    seq(time(notBefore), time(notAfter)),
    name,
    publicKey.export({ type: 'spki', format: 'der' }), // SubjectPublicKeyInfo, already DER
  );
  const signature = sign('sha256', tbs, privateKey); // DER ECDSA-Sig-Value, as X.509 wants it
  const der = seq(tbs, seq(oid(OID_ECDSA_WITH_SHA256)), tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
  return {
    keys: {
      certPem: pem('CERTIFICATE', der),
      keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      signatureHash: { hash: HashAlgorithm.sha256_4, signature: SignatureAlgorithm.ecdsa_3 },
    },
    notBefore,
    notAfter,
  };
}

let current: DtlsCertificate | undefined;

/** This process's certificate for new calls: made on first use, renewed a day before it expires. */
export function dtlsKeys(now = new Date()): DtlsKeys {
  if (!current || now.getTime() >= current.notAfter.getTime() - RENEW_BEFORE_MS) current = createDtlsCertificate(now);
  return current.keys;
}

// ---- minimal DER (X.690) ----------------------------------------------------------------------------------------

const OID_COMMON_NAME = '2.5.4.3';
const OID_ECDSA_WITH_SHA256 = '1.2.840.10045.4.3.2';

function tlv(tag: number, body: Buffer): Buffer {
  const n = body.length;
  const len =
    n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), len, body]);
}

const seq = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]) => tlv(0x31, Buffer.concat(items));

/** A non-negative INTEGER from big-endian bytes (a leading 0 keeps a high first bit from reading as negative). */
function integer(bytes: Buffer): Buffer {
  return tlv(0x02, bytes[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
}

/** A positive 64-bit random serial (RFC 5280 asks for unique, positive, at most 20 bytes). */
function serialNumber(): Buffer {
  const b = randomBytes(8);
  b[0] = (b[0]! & 0x7f) | 0x01; // positive, and no leading zero byte to strip
  return b;
}

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const out = [a! * 40 + b!];
  for (const v of rest) {
    const base128 = [v & 0x7f];
    for (let x = v >>> 7; x > 0; x >>>= 7) base128.unshift((x & 0x7f) | 0x80);
    out.push(...base128);
  }
  return tlv(0x06, Buffer.from(out));
}

/** UTCTime until 2049, GeneralizedTime from 2050 (RFC 5280 4.1.2.5). */
function time(d: Date): Buffer {
  const iso = d.toISOString(); // 2026-11-22T11:03:04.123Z
  const digits = iso.slice(0, 19).replace(/[-T:]/g, '') + 'Z'; // 20261122110304Z
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(digits.slice(2))) : tlv(0x18, Buffer.from(digits));
}

function pem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

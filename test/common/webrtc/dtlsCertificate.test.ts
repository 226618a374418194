// The DTLS certificate both peers present (src/common/webrtc/dtlsCertificate.ts): a hand-made DER certificate must
// parse and verify in OpenSSL (Node's X509Certificate), in werift's own parser (@fidm/x509), and carry a key that
// signs what werift asks it to. Calls with it (agent <-> companion, Chromium <-> companion) are in the e2e tests.
import { X509Certificate, createPrivateKey, createPublicKey, verify } from 'node:crypto';
import { Certificate, PrivateKey } from '@fidm/x509';
import { describe, expect, it } from 'vitest';
import { CERTIFICATE_LIFETIME_MS, createDtlsCertificate, dtlsKeys } from '../../../src/common/webrtc/dtlsCertificate.js';

describe('createDtlsCertificate', () => {
  it('is a self-signed ECDSA P-256 certificate that OpenSSL parses and verifies, with the matching key', () => {
    const now = new Date('2026-11-22T10:00:00Z');
    const { keys, notBefore, notAfter } = createDtlsCertificate(now);
    const cert = new X509Certificate(keys.certPem);
    expect(cert.subject).toBe('CN=speaker-agent');
    expect(cert.issuer).toBe(cert.subject);
    expect(cert.publicKey.asymmetricKeyType).toBe('ec');
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(cert.verify(cert.publicKey)).toBe(true); // the signature over the TBS part is valid
    expect(cert.checkPrivateKey(createPrivateKey(keys.keyPem))).toBe(true);
    expect(new Date(cert.validFrom).getTime()).toBe(Math.floor(notBefore.getTime() / 1000) * 1000);
    expect(new Date(cert.validTo).getTime()).toBe(Math.floor(notAfter.getTime() / 1000) * 1000);
    expect(notBefore.getTime()).toBeLessThan(now.getTime()); // back-dated for peers whose clock lags
    expect(notAfter.getTime() - now.getTime()).toBe(CERTIFICATE_LIFETIME_MS);
    expect(BigInt(`0x${cert.serialNumber}`)).toBeGreaterThan(0n);
    expect(keys.signatureHash).toEqual({ hash: 4, signature: 3 }); // sha256, ecdsa (TLS 1.2 registry numbers)
  });

  it("parses in werift's certificate parser, and its key signs what werift's handshake signs", () => {
    const { keys } = createDtlsCertificate();
    const cert = Certificate.fromPEM(Buffer.from(keys.certPem));
    expect(cert.subject.commonName).toBe('speaker-agent');
    expect(cert.version).toBe(3);
    const key = PrivateKey.fromPEM(Buffer.from(keys.keyPem));
    const data = Buffer.from('ServerKeyExchange params');
    const sig = key.sign(data, 'sha256'); // what werift's CipherContext.generateKeySignature does
    expect(verify('sha256', data, createPublicKey(keys.certPem), sig)).toBe(true);
  });

  it('writes GeneralizedTime for dates from 2050 on (RFC 5280), and OpenSSL reads them back', () => {
    const { keys, notAfter } = createDtlsCertificate(new Date('2049-12-20T00:00:00Z'));
    expect(notAfter.getUTCFullYear()).toBe(2050);
    const cert = new X509Certificate(keys.certPem);
    expect(new Date(cert.validTo).getTime()).toBe(notAfter.getTime());
    expect(new Date(cert.validFrom).getUTCFullYear()).toBe(2049);
  });

  it('each certificate has its own key and serial', () => {
    const a = new X509Certificate(createDtlsCertificate().keys.certPem);
    const b = new X509Certificate(createDtlsCertificate().keys.certPem);
    expect(a.fingerprint256).not.toBe(b.fingerprint256);
    expect(a.serialNumber).not.toBe(b.serialNumber);
  });
});

describe('dtlsKeys', () => {
  it('reuses the process certificate, and renews it a day before it expires', () => {
    const t0 = new Date('2026-11-22T10:00:00Z');
    const first = dtlsKeys(t0);
    expect(dtlsKeys(new Date(t0.getTime() + 60_000))).toBe(first);
    const renewed = dtlsKeys(new Date(t0.getTime() + CERTIFICATE_LIFETIME_MS - 23 * 3600_000));
    expect(renewed).not.toBe(first);
    expect(new Date(new X509Certificate(renewed.certPem).validTo).getTime()).toBeGreaterThan(t0.getTime() + CERTIFICATE_LIFETIME_MS);
  });
});

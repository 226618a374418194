// vendor/speaker-sys srtpGcm (src/srtp_gcm.c): AES-128-GCM as the GCM specification's test vector and node's own
// crypto compute it; a packet that does not authenticate is null; bad arguments are clear errors, never a crash.
// Then werift as patched (scripts/patch-dependencies.mjs): its SRTP AES-GCM sessions use the addon, produce what
// node's crypto produces for the same session key and IV, and still reject a tampered packet.
import { createCipheriv, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { ProtectionProfileAeadAes128Gcm, RtpHeader, RtpPacket, SrtpAuthenticationError, SrtpSession } from 'werift';

const sys = createRequire(import.meta.url)('speaker-sys') as typeof import('speaker-sys');
const gcm = sys.srtpGcm!;
const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

describe('speaker-sys srtpGcm', () => {
  it('loads on this node (node exports OpenSSL to addons)', () => {
    expect(gcm).toBeDefined();
  });

  it('matches the GCM specification test vector (McGrew & Viega, test case 4: AES-128, with AAD)', () => {
    const key = hex('feffe9928665731c6d6a8f9467308308');
    const iv = hex('cafebabefacedbaddecaf888');
    const aad = hex('feedfacedeadbeeffeedfacedeadbeefabaddad2');
    const plain = hex(`d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525
      b16aedf5aa0de657ba637b39`);
    const cipher = hex(`42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa05
      1ba30b396a0aac973d58e091`);
    const tag = hex('5bc94fbc3221a5db94fae95ae7121a47');
    const ctx = gcm.gcmContext(key);
    const sealed = gcm.gcmSeal(ctx, iv, aad, plain);
    expect(sealed.toString('hex')).toBe(Buffer.concat([aad, cipher, tag]).toString('hex'));
    expect(gcm.gcmOpen(ctx, iv, sealed, aad.length)?.toString('hex')).toBe(Buffer.concat([aad, plain]).toString('hex'));
  });

  it('agrees with node crypto over many packets on one context (only the IV changes per packet)', () => {
    const key = randomBytes(16);
    const ctx = gcm.gcmContext(key);
    for (let i = 0; i < 200; i++) {
      const iv = randomBytes(12);
      const aad = randomBytes(12 + (i % 5) * 4);
      const plain = randomBytes(i % 170);
      const c = createCipheriv('aes-128-gcm', key, iv);
      c.setAAD(aad);
      const expected = Buffer.concat([aad, c.update(plain), c.final(), c.getAuthTag()]);
      const sealed = gcm.gcmSeal(ctx, iv, aad, plain);
      expect(sealed.equals(expected)).toBe(true);
      expect(gcm.gcmOpen(ctx, iv, sealed, aad.length)?.equals(Buffer.concat([aad, plain]))).toBe(true);
    }
  });

  it('a packet that does not authenticate is null: a flipped bit in header, payload or tag, another key or IV', () => {
    const key = randomBytes(16);
    const iv = randomBytes(12);
    const ctx = gcm.gcmContext(key);
    const sealed = gcm.gcmSeal(ctx, iv, randomBytes(12), randomBytes(60));
    for (const at of [0, 11, 12, 40, sealed.length - 1]) {
      const bad = Buffer.from(sealed);
      bad[at] ^= 0x01;
      expect(gcm.gcmOpen(ctx, iv, bad, 12), `bit flipped at ${at}`).toBeNull();
    }
    expect(gcm.gcmOpen(gcm.gcmContext(randomBytes(16)), iv, sealed, 12)).toBeNull();
    expect(gcm.gcmOpen(ctx, randomBytes(12), sealed, 12)).toBeNull();
    expect(gcm.gcmOpen(ctx, iv, sealed, 12)).not.toBeNull(); // the context is still good after failures
  });

  it('bad arguments are TypeError or RangeError', () => {
    const ctx = gcm.gcmContext(randomBytes(16));
    const iv = randomBytes(12);
    expect(() => gcm.gcmContext(randomBytes(32))).toThrow(RangeError);
    expect(() => gcm.gcmContext('key' as never)).toThrow(TypeError);
    expect(() => gcm.gcmSeal({} as never, iv, Buffer.alloc(12), Buffer.alloc(1))).toThrow(TypeError);
    expect(() => gcm.gcmSeal(ctx, randomBytes(16), Buffer.alloc(12), Buffer.alloc(1))).toThrow(RangeError);
    expect(() => gcm.gcmSeal(ctx, iv, 'aad' as never, Buffer.alloc(1))).toThrow(TypeError);
    expect(() => (gcm.gcmSeal as (...a: unknown[]) => Buffer)(ctx, iv)).toThrow(TypeError);
    expect(() => gcm.gcmOpen(ctx, iv, Buffer.alloc(20), 12)).toThrow(RangeError); // shorter than header + tag
    expect(() => gcm.gcmOpen(ctx, iv, Buffer.alloc(40), -1)).toThrow(RangeError);
    expect(() => gcm.gcmOpen(ctx, iv, Buffer.alloc(40), '12' as never)).toThrow(TypeError);
  });
});

describe('werift SRTP AES-GCM through speaker-sys (patched)', () => {
  const keys = { a: randomBytes(16), aSalt: randomBytes(12), b: randomBytes(16), bSalt: randomBytes(12) };
  const session = (local: 'a' | 'b', remote: 'a' | 'b'): SrtpSession =>
    new SrtpSession({
      profile: ProtectionProfileAeadAes128Gcm,
      keys: {
        localMasterKey: keys[local],
        localMasterSalt: keys[`${local}Salt`],
        remoteMasterKey: keys[remote],
        remoteMasterSalt: keys[`${remote}Salt`],
      },
    });

  it('encrypts what node crypto computes for the session key and IV, and the other side decrypts it', () => {
    const sender = session('a', 'b');
    const receiver = session('b', 'a');
    const payload = randomBytes(80);
    const header = new RtpHeader({ sequenceNumber: 4242, timestamp: 960 * 7, ssrc: 0x1234abcd, payloadType: 111, marker: true });
    const srtp = sender.encrypt(payload, header);
    // The reference: werift's own formula (RFC 7714 section 8) with node crypto, on the same session key.
    const cipher = (sender.localContext as unknown as { cipher: Record<string, unknown> }).cipher;
    expect(cipher.speakerAgentRtpKey, 'the native context was used').toBeDefined();
    const iv = (cipher.rtpInitializationVector as (h: RtpHeader, roc: number) => Buffer).call(cipher, header, 0);
    const ref = createCipheriv('aes-128-gcm', cipher.srtpSessionKey as Buffer, iv);
    const hdr = header.serialize(header.serializeSize);
    ref.setAAD(hdr);
    expect(srtp.equals(Buffer.concat([hdr, ref.update(payload), ref.final(), ref.getAuthTag()]))).toBe(true);

    const rtp = RtpPacket.deSerialize(receiver.decrypt(srtp));
    expect(rtp.header.sequenceNumber).toBe(4242);
    expect(rtp.header.ssrc).toBe(0x1234abcd);
    expect(rtp.payload.equals(payload)).toBe(true);
  });

  it('a tampered packet is an SrtpAuthenticationError, as in werift without the patch', () => {
    const sender = session('a', 'b');
    const receiver = session('b', 'a');
    const srtp = sender.encrypt(randomBytes(40), new RtpHeader({ sequenceNumber: 1, timestamp: 0, ssrc: 7, payloadType: 111 }));
    srtp[20] ^= 0x80;
    expect(() => receiver.decrypt(srtp)).toThrow(SrtpAuthenticationError);
  });
});

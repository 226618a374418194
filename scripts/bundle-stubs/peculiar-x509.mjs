// Stands in for @peculiar/x509 in the production bundle (scripts/build.mjs). werift loads that certificate
// stack (~450 KB of JavaScript with asn1js, the @peculiar/asn1-* schemas and tsyringe) only to make its own DTLS
// certificate; both of our peers pass one made by src/common/webrtc/dtlsCertificate.ts, so werift never calls it.
// If a future werift does, the call fails loudly here instead of silently growing the agent again.
const unused = (what) => () => {
  throw new Error(`@peculiar/x509 ${what} is not bundled: pass dtls.keys from src/common/webrtc/dtlsCertificate.ts`);
};
export const cryptoProvider = { set() {} }; // werift calls this once at load
export const X509CertificateGenerator = { createSelfSigned: unused('X509CertificateGenerator.createSelfSigned') };
export const PemConverter = { encode: unused('PemConverter.encode') };

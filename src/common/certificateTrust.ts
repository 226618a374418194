// A TLS failure because the server's certificate chains to no CA this node trusts. On a speaker the usual cause is
// a server with its own CA (a home server, mkcert, step-ca, Caddy's internal CA): node trusts the CAs bundled in
// it, not the ones installed on the system (update-ca-certificates), and OpenSSL's words ("unable to verify the
// first certificate") do not say what to do. Node 24+ adds "try running Node.js with --use-system-ca", a flag a
// systemd service does not take from a shell; the environment file the unit reads does.
// Not the default: trusting the system's CAs as well cost 3.4 MB of RSS once TLS is used (Node 26, x86-64, 290
// entries in /etc/ssl/certs), for a speaker whose server has a public certificate.

const TRUST_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', // a leaf whose issuer is unknown (the server sent no chain)
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', // a chain whose root is unknown
  'UNABLE_TO_GET_ISSUER_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN', // a chain ending in a root that is not trusted
  'DEPTH_ZERO_SELF_SIGNED_CERT', // a self-signed certificate
]);

/** The untrusted-issuer code of a failed request (node's errors carry it on the error or a cause), or undefined. */
export function certificateTrustCode(err: unknown): string | undefined {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && TRUST_CODES.has(code)) return code;
  }
  return undefined;
}

/** Whether this Node reads NODE_USE_SYSTEM_CA=1 (added in 22.19 and 24.6). */
export function nodeReadsSystemCaVariable(version = process.versions.node): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major >= 25 || (major === 24 && minor >= 6) || (major === 22 && minor >= 19);
}

export interface TrustWords {
  /** whose certificate: "the server's" (default), "the relay's" */
  whose?: string;
  /** the environment file an installed service reads */
  environmentFile?: string;
  nodeVersion?: string;
}

/** What to do about an untrusted certificate, in words. */
export function certificateTrustFix(o: TrustWords = {}): string {
  const file = o.environmentFile ?? '/etc/speaker-agent/environment';
  const version = o.nodeVersion ?? process.versions.node;
  const system = nodeReadsSystemCaVariable(version)
    ? ', or NODE_USE_SYSTEM_CA=1 there to trust the CAs installed on this system (update-ca-certificates)'
    : ` (this Node, ${version}, cannot trust the system's CAs: NODE_USE_SYSTEM_CA needs 22.19, 24.6 or later)`;
  return `for a server with its own CA (a home server, mkcert, step-ca), give node that CA: NODE_EXTRA_CA_CERTS=/path/to/ca.pem in ${file} (an installed speaker; the shell's environment otherwise)${system}`;
}

/** Words for an untrusted certificate with the fix; undefined when `err` is not one. */
export function certificateTrustProblem(err: unknown, o: TrustWords = {}): string | undefined {
  const code = certificateTrustCode(err);
  if (!code) return undefined;
  return `${o.whose ?? "the server's"} certificate is not signed by a CA this device trusts (${code}): ${certificateTrustFix(o)}`;
}

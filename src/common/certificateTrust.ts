// A TLS failure because the server's certificate chains to no CA this node trusts. On a speaker the usual cause is
// a server with its own CA (a home server, mkcert, step-ca, Caddy's internal CA): node trusts the CAs bundled in
// it, not the ones installed on the system (update-ca-certificates), and OpenSSL's words ("unable to verify the
// first certificate") do not say what to do. Node 24+ adds "try running Node.js with --use-system-ca", a
// command-line flag; a service takes its options from the environment file its unit reads, which is named here.
// Not the default: trusting the system's CAs as well cost 2.8 MB of RSS once TLS is used (Node 26, x86-64, 290
// entries in /etc/ssl/certs; nothing without TLS), for a speaker whose server has a public certificate.
import { codeAmongCauses } from './errors.js';

const TRUST_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', // a leaf whose issuer is unknown (the server sent no chain)
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', // a chain whose root is unknown
  'UNABLE_TO_GET_ISSUER_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN', // a chain ending in a root that is not trusted
  'DEPTH_ZERO_SELF_SIGNED_CERT', // a self-signed certificate
]);

/** The untrusted-issuer code of a failed request (node's errors carry it on the error or a cause), or undefined. */
export function certificateTrustCode(err: unknown): string | undefined {
  return codeAmongCauses(err, (code) => TRUST_CODES.has(code));
}

/** Whether this Node reads NODE_USE_SYSTEM_CA=1 (added in 22.19 and 24.6). */
export function nodeReadsSystemCaVariable(version = process.versions.node): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major >= 25 || (major === 24 && minor >= 6) || (major === 22 && minor >= 19);
}

/** How this Node is told to trust the system's CAs (update-ca-certificates' store), in an environment file. */
export function systemCaSetting(version = process.versions.node, nodeOptionsFlags: ReadonlySet<string> = process.allowedNodeEnvironmentFlags): string {
  if (nodeReadsSystemCaVariable(version)) return 'NODE_USE_SYSTEM_CA=1';
  // --use-system-ca from 22.15 and 23.9 (beside node's own CAs); before it, only OpenSSL's store instead of them
  if (nodeOptionsFlags.has('--use-system-ca')) return 'NODE_OPTIONS=--use-system-ca (added to NODE_OPTIONS if the file sets it)';
  return "NODE_OPTIONS=--use-openssl-ca (added to NODE_OPTIONS if the file sets it; OpenSSL's store instead of node's own CAs)";
}

export interface TrustWords {
  /** whose certificate: "the server's" (default), "the relay's" */
  whose?: string;
  /** the environment file an installed service reads, and the service to restart */
  environmentFile?: string;
  service?: string;
}

/** What is wrong, without the fix. */
export function certificateTrustSummary(code: string, whose = "the server's"): string {
  return `${whose} certificate is not signed by a CA this device trusts (${code})`;
}

/** What to do about an untrusted certificate, in words. */
export function certificateTrustFix(o: TrustWords = {}): string {
  const file = o.environmentFile ?? '/etc/speaker-agent/environment';
  const service = o.service ?? 'speaker-agent';
  return (
    `for a server with its own CA (a home server, mkcert, step-ca), give node that CA: NODE_EXTRA_CA_CERTS=/path/to/ca.pem ` +
    `(a file the service's user can read, e.g. /etc/speaker-agent/ca.pem, mode 0644) in ${file}, or ${systemCaSetting()} there ` +
    `to trust the CAs installed on this system (update-ca-certificates); then sudo systemctl restart ${service} ` +
    `(not installed: the same variables in the shell's environment)`
  );
}

/** Words for an untrusted certificate with the fix; undefined when `err` is not one. */
export function certificateTrustProblem(err: unknown, o: TrustWords = {}): string | undefined {
  const code = certificateTrustCode(err);
  if (!code) return undefined;
  return `${certificateTrustSummary(code, o.whose)}: ${certificateTrustFix(o)}`;
}

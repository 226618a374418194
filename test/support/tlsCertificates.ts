// Real certificates for real TLS tests, made with openssl: a CA valid now, and a server certificate for
// 127.0.0.1 (or another address) signed by it whose validity is chosen (in the future: what a device whose clock is months behind
// sees; in the past: expired). `openssl ca` because `openssl x509` of OpenSSL 3.0 cannot set a start date.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface TestCertificates {
  /** the CA to trust (PEM); also written to caFile, for NODE_EXTRA_CA_CERTS */
  ca: string;
  caFile: string;
  key: string;
  cert: string;
  /** the same, as files (for a server such as coturn that reads them) */
  keyFile: string;
  certFile: string;
  remove(): void;
}

const DAY_MS = 86_400_000;
/** openssl ca's time format: YYYYMMDDHHMMSSZ */
const asn1Time = (ms: number) => new Date(ms).toISOString().replace(/[-:T]/g, '').replace(/\.\d+Z$/, 'Z');

export function serverCertificate(validFromDays: number, validToDays: number, ip = '127.0.0.1'): TestCertificates {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tls-cert-'));
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  writeFileSync(
    path.join(dir, 'ca.cnf'),
    ['[ca]', 'default_ca = local', '[local]', 'dir = .', 'database = index.txt', 'new_certs_dir = .', 'serial = serial', 'default_md = sha256', 'policy = anything', 'copy_extensions = copy', 'unique_subject = no', '[anything]', 'commonName = supplied', ''].join('\n'),
  );
  writeFileSync(path.join(dir, 'index.txt'), '');
  writeFileSync(path.join(dir, 'serial'), '01\n');
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  run(['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '3650', '-subj', '/CN=speaker-agent test CA']);
  run(['req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', `/CN=${ip}`, '-addext', `subjectAltName=IP:${ip}`]);
  const now = Date.now();
  run(['ca', '-batch', '-config', 'ca.cnf', '-cert', 'ca.pem', '-keyfile', 'ca.key', '-in', 'server.csr', '-out', 'server.pem', '-notext', '-startdate', asn1Time(now + validFromDays * DAY_MS), '-enddate', asn1Time(now + validToDays * DAY_MS)]);
  const read = (f: string) => readFileSync(path.join(dir, f), 'utf8');
  return { ca: read('ca.pem'), caFile: path.join(dir, 'ca.pem'), key: read('server.key'), cert: read('server.pem'), keyFile: path.join(dir, 'server.key'), certFile: path.join(dir, 'server.pem'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

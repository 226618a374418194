// A TLS failure that is the server's own CA, named so with the fix (src/common/certificateTrust.ts): a real HTTPS
// server whose certificate comes from a CA node does not trust (what a home server, mkcert or step-ca gives),
// reached through the agent's ServiceClient. doctor.test.ts checks that the fix it names works.
import https from 'node:https';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentError } from '../../src/agent/errors.js';
import { ServiceClient } from '../../src/agent/serviceClient.js';
import { certificateTrustCode, certificateTrustProblem, nodeReadsSystemCaVariable, systemCaSetting } from '../../src/common/certificateTrust.js';
import { serverCertificate, type TestCertificates } from '../support/tlsCertificates.js';

const made: TestCertificates[] = [];
const servers: https.Server[] = [];
afterAll(async () => {
  for (const s of servers) await new Promise((r) => s.close(r));
  for (const c of made) c.remove();
});

describe("a server certificate from a CA this node does not trust", () => {
  it('regression: it said only "unable to verify the first certificate" (and on Node 24+, to run node with a flag a service does not take); the error names the CA and the environment file', async () => {
    const c = serverCertificate(-1, 30);
    made.push(c);
    const s = https.createServer({ key: c.key, cert: c.cert }, (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    servers.push(s);
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    const client = new ServiceClient({ baseUrl: `https://127.0.0.1:${(s.address() as { port: number }).port}`, credentials: { workspaceKey: 'ws-key', clientId: randomUUID(), clientSecret: 'S'.repeat(43) }, timeoutMs: 5_000 });
    const err = await client.createSession().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AgentError);
    expect((err as AgentError).code).toBe('network');
    expect(certificateTrustCode(err)).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    const message = (err as AgentError).message;
    expect(message).toMatch(/: the server's certificate is not signed by a CA this device trusts \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\): for a server with its own CA/);
    expect(message).toMatch(/NODE_EXTRA_CA_CERTS=\/path\/to\/ca\.pem \(a file the service's user can read, [^)]*\) in \/etc\/speaker-agent\/environment/);
    expect(message).not.toContain('--use-system-ca');
    client.dropIdleConnections();
  });

  it("names the setting this Node reads for the system's CAs: NODE_USE_SYSTEM_CA (22.19, 24.6+), else --use-system-ca (22.15, 23.9+), else --use-openssl-ca", () => {
    const table: [string, boolean][] = [['20.20.2', false], ['22.18.0', false], ['22.19.0', true], ['23.11.0', false], ['24.5.0', false], ['24.6.0', true], ['26.10.0', true]];
    expect(table.map(([v]) => nodeReadsSystemCaVariable(v))).toEqual(table.map(([, ok]) => ok));
    const withFlag = new Set(['--use-system-ca', '--use-openssl-ca']);
    const without = new Set(['--use-openssl-ca']);
    expect(systemCaSetting('26.10.0', withFlag)).toBe('NODE_USE_SYSTEM_CA=1');
    expect(systemCaSetting('22.18.0', withFlag)).toMatch(/^NODE_OPTIONS=--use-system-ca \(added to NODE_OPTIONS/);
    expect(systemCaSetting('20.20.2', without)).toMatch(/^NODE_OPTIONS=--use-openssl-ca \(added to NODE_OPTIONS if the file sets it; OpenSSL's store instead of node's own CAs\)$/);
    // this Node's own answer is one its NODE_OPTIONS takes (node refuses an unknown option there)
    const own = systemCaSetting();
    const flag = /^NODE_OPTIONS=(\S+)/.exec(own)?.[1];
    if (flag) expect(process.allowedNodeEnvironmentFlags.has(flag)).toBe(true);
    else expect(nodeReadsSystemCaVariable()).toBe(true);
    const err = { code: 'SELF_SIGNED_CERT_IN_CHAIN' };
    expect(certificateTrustProblem(err)).toContain(`, or ${own} there to trust the CAs installed on this system (update-ca-certificates); then sudo systemctl restart speaker-agent`);
    const endpoint = certificateTrustProblem(new Error('x', { cause: { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' } }), { whose: "the endpoint's", environmentFile: '/etc/speaker-agent/companion.env', service: 'speaker-agent-companion' });
    expect(endpoint).toMatch(/^the endpoint's certificate is not signed by a CA this device trusts \(DEPTH_ZERO_SELF_SIGNED_CERT\): .* in \/etc\/speaker-agent\/companion\.env, .*restart speaker-agent-companion/);
    // not a trust failure: the clock's (certificateClock.ts), or no certificate at all
    expect(certificateTrustProblem({ code: 'CERT_NOT_YET_VALID' })).toBeUndefined();
    expect(certificateTrustProblem(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBeUndefined();
    expect(certificateTrustProblem(undefined)).toBeUndefined();
  });
});

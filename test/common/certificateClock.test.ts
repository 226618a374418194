// A TLS failure that is the clock's, named so (src/common/certificateClock.ts): real HTTPS servers whose
// certificates are valid only in the future (what a board booted with fake-hwclock's months-old time sees) or
// only in the past, reached through the agent's ServiceClient with the test CA trusted.
import https from 'node:https';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentError } from '../../src/agent/errors.js';
import { ServiceClient } from '../../src/agent/serviceClient.js';
import { certificateClockCode, certificateClockProblem } from '../../src/common/certificateClock.js';
import { serverCertificate, type TestCertificates } from '../support/tlsCertificates.js';

const made: TestCertificates[] = [];
const servers: https.Server[] = [];
afterAll(async () => {
  for (const s of servers) await new Promise((r) => s.close(r));
  for (const c of made) c.remove();
});

/** An HTTPS server with a certificate valid from..to (days from now), and its CA. */
async function tlsServer(fromDays: number, toDays: number): Promise<{ url: string; ca: string }> {
  const c = serverCertificate(fromDays, toDays);
  made.push(c);
  const s = https.createServer({ key: c.key, cert: c.cert }, (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  return { url: `https://127.0.0.1:${(s.address() as { port: number }).port}`, ca: c.ca };
}

/** The agent's client for that server, trusting its CA (on the client's own connection pool: what
 *  NODE_EXTRA_CA_CERTS does for a whole process, which a test cannot set once it runs). */
function clientOf(server: { url: string; ca: string }): ServiceClient {
  const client = new ServiceClient({ baseUrl: server.url, credentials: { workspaceKey: 'ws-key', clientId: randomUUID(), clientSecret: 'S'.repeat(43) }, timeoutMs: 5_000 });
  (client as unknown as { agents: Record<'https:', https.Agent> }).agents['https:'].options.ca = [server.ca];
  return client;
}

async function sessionError(server: { url: string; ca: string }): Promise<AgentError> {
  const client = clientOf(server);
  const err = await client.createSession().then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof AgentError)) throw new Error(`expected an AgentError, got ${String(err)}`);
  return err;
}

describe('a certificate refused for this machine\'s time', () => {
  it('regression: a server certificate not yet valid by a clock months behind (fake-hwclock after a Pi sat unplugged) said only "certificate is not yet valid"; the error names the clock and time sync', async () => {
    const err = await sessionError(await tlsServer(400, 800));
    expect(err.code).toBe('network');
    expect(certificateClockCode(err)).toBe('CERT_NOT_YET_VALID');
    expect(err.message).toMatch(/certificate is not yet valid by this machine's clock, \d{4}-\d\d-\d\dT/);
    expect(err.message).toMatch(/NTP syncs \(timedatectl/);
  });

  it('an expired certificate: the clock is suspected, and the server\'s certificate named if the clock is right', async () => {
    const err = await sessionError(await tlsServer(-800, -400));
    expect(certificateClockCode(err)).toBe('CERT_HAS_EXPIRED');
    expect(err.message).toMatch(/certificate is expired by this machine's clock/);
    expect(err.message).toMatch(/if the clock is right, the server's certificate has expired/);
  });

  it('a certificate valid now still answers (the CA is trusted: the failures above are the dates)', async () => {
    const answer = await clientOf(await tlsServer(-1, 30)).requestApp('GET', '/anything');
    expect(answer.status).toBe(200);
  });

  it('other errors are not the clock', () => {
    expect(certificateClockProblem(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBeUndefined();
    expect(certificateClockProblem(new Error('x', { cause: { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' } }))).toBeUndefined();
    expect(certificateClockProblem(new Error('x', { cause: { code: 'CERT_NOT_YET_VALID' } }), new Date(0))).toMatch(/1970-01-01T00:00:00\.000Z/);
    expect(certificateClockProblem(undefined)).toBeUndefined();
  });
});

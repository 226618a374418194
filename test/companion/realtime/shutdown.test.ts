// Issue 17: a companion that shuts down tells its devices at once (SCTP ABORT before DTLS goes), so a device does
// not wait for its liveness checks. A real agent Call (WebrtcTransport, ServiceClient) against the real companion.
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Call } from '../../../src/agent/call.js';
import type { AgentError } from '../../../src/agent/errors.js';
import type { Mixer } from '../../../src/agent/mixer/mixer.js';
import { ServiceClient } from '../../../src/agent/serviceClient.js';
import { WebrtcTransport } from '../../../src/agent/transport/webrtcTransport.js';
import { silentLogger } from '../../../src/common/logger.js';
import { startRealtimeTestServer } from '../../support/realtimeServer.js';

describe('companion shutdown', () => {
  it('regression: a server stop was noticed by the device only through its silence watchdog; now the data channel closes at once', async () => {
    const srv = await startRealtimeTestServer();
    let closed = false;
    const call = new Call({
      client: new ServiceClient({
        baseUrl: srv.url,
        credentials: { workspaceKey: srv.workspaceKey, clientId: randomUUID(), clientSecret: randomBytes(24).toString('hex'), appSource: 'shutdown-test' },
        timeoutMs: 5_000,
      }),
      transport: new WebrtcTransport({ additionalHostAddresses: ['127.0.0.1'] }),
      mixer: {} as Mixer, // no device function is called in this test
      logger: silentLogger,
      livenessTimeoutMs: 5_000,
      connectTimeoutMs: 10_000,
      hooks: { onAudio: () => undefined, onTranscript: () => undefined, onFunction: () => undefined },
    });
    try {
      await call.connect();
      await new Promise((r) => setTimeout(r, 500));
      await srv.close();
      closed = true;
      const reason = (await call.ended) as AgentError;
      expect(reason.message).toBe('the peer closed the data channel');
      expect(call.liveness.probes).toBe(0); // not found out by asking: told
    } finally {
      await call.close();
      if (!closed) await srv.close();
    }
  }, 30_000);
});

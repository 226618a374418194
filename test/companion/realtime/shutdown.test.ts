// Issue 17: a companion that shuts down tells its devices at once (SCTP ABORT before DTLS goes), so a device does
// not wait for its liveness checks. A real agent Call (WebrtcTransport, ServiceClient) against the real companion.
import { describe, expect, it } from 'vitest';
import type { AgentError } from '../../../src/agent/errors.js';
import { realCall } from '../../support/realCall.js';
import { startRealtimeTestServer } from '../../support/realtimeServer.js';

describe('companion shutdown', () => {
  it('regression: a server stop was noticed by the device only through its silence watchdog; now the data channel closes at once', async () => {
    const srv = await startRealtimeTestServer();
    let closed = false;
    const call = realCall({ url: srv.url, workspaceKey: srv.workspaceKey });
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

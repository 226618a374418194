// A real agent Call (WebrtcTransport over werift, ServiceClient over HTTP) against a test peer or the companion,
// for the tests that drive one call without the whole SpeakerAgent.
import { randomBytes, randomUUID } from 'node:crypto';
import { Call, type CallHooks } from '../../src/agent/call.js';
import type { Mixer } from '../../src/agent/mixer/mixer.js';
import { ServiceClient } from '../../src/agent/serviceClient.js';
import { WebrtcTransport } from '../../src/agent/transport/webrtcTransport.js';
import { silentLogger } from '../../src/common/logger.js';

export function realCall(o: {
  url: string;
  workspaceKey: string;
  /** default: a fresh client id and secret (enrolled on first use) */
  clientId?: string;
  clientSecret?: string;
  /** default: none (a test that runs no device function) */
  mixer?: Mixer;
  livenessTimeoutMs?: number;
  hooks?: Partial<CallHooks>;
}): Call {
  return new Call({
    client: new ServiceClient({
      baseUrl: o.url,
      credentials: { workspaceKey: o.workspaceKey, clientId: o.clientId ?? randomUUID(), clientSecret: o.clientSecret ?? randomBytes(24).toString('hex'), appSource: 'test' },
      timeoutMs: 5_000,
    }),
    transport: new WebrtcTransport({ additionalHostAddresses: ['127.0.0.1'] }),
    mixer: o.mixer ?? ({} as Mixer),
    logger: silentLogger,
    livenessTimeoutMs: o.livenessTimeoutMs ?? 5_000,
    connectTimeoutMs: 10_000,
    hooks: { onAudio: () => undefined, onTranscript: () => undefined, onFunction: () => undefined, ...o.hooks },
  });
}

// ScriptedTransport: a TransportLayer without a network, for unit tests of the call logic (event parsing,
// function dispatch, liveness). The test plays the server: it injects data-channel messages, audio and a close,
// and reads what the call sent. The real transport is covered by webrtcTransport.test.ts and the e2e test.
import { AgentError } from '../../src/agent/errors.js';
import type { InboundRtp, TransportConnectOptions, TransportHandlers, TransportLayer } from '../../src/agent/transport/transportLayer.js';
import type { ClientEvent } from '../../src/protocol/events.js';

export class ScriptedTransport implements TransportLayer {
  handlers: TransportHandlers | undefined;
  readonly sent: Array<Record<string, unknown>> = [];
  readonly audioSent: Array<{ opus: Buffer; samples: number }> = [];
  connectError: AgentError | undefined;
  closed = false;
  private waiters: Array<() => void> = [];

  async connect(o: TransportConnectOptions): Promise<void> {
    if (this.connectError) throw this.connectError;
    this.handlers = o.handlers;
  }

  send(event: ClientEvent): boolean {
    if (this.closed) return false;
    this.sent.push(JSON.parse(JSON.stringify(event)) as Record<string, unknown>);
    for (const w of this.waiters.splice(0)) w();
    return true;
  }

  sendAudio(opus: Buffer, samples: number): void {
    this.audioSent.push({ opus, samples });
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  /** server -> device */
  message(data: string | object): void {
    this.handlers?.onMessage(typeof data === 'string' ? data : JSON.stringify(data));
  }

  audio(p: InboundRtp): void {
    this.handlers?.onAudio(p, process.hrtime.bigint());
  }

  peerCloses(): void {
    this.handlers?.onClosed(new AgentError('call_failed', 'scripted: the peer closed'));
  }

  /** Resolves once `n` events were sent by the device. */
  async waitSent(n: number, timeoutMs = 5_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (this.sent.length < n) {
      if (Date.now() > end) throw new Error(`only ${this.sent.length} of ${n} events sent`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
  }
}

// The call's transport, behind one small interface (like @openai/agents-realtime's transport layer): the call
// logic (events, functions, liveness) does not know it is WebRTC. webrtcTransport.ts is the real one (werift);
// scriptedTransport.ts drives the call logic in unit tests.
import type { ClientEvent } from '../../protocol/events.js';
import type { RealtimeSession } from '../../protocol/session.js';
import type { AgentError } from '../errors.js';

/** An inbound RTP packet, as Downlink.push takes it. */
export interface InboundRtp {
  sequenceNumber: number;
  timestamp: number;
  ssrc: number;
  payload: Buffer;
  marker: boolean;
}

export interface TransportHandlers {
  /** a data-channel message, unparsed (the call parses it defensively) */
  onMessage(data: string | Buffer): void;
  /** an inbound Opus RTP packet; receivedAtNs from process.hrtime.bigint() */
  onAudio(packet: InboundRtp, receivedAtNs: bigint): void;
  /** any other sign of life from the peer (RTCP) */
  onActivity(): void;
  /** the peer's RTCP report on our audio: the fraction (0..1) of our packets it lost since its last report */
  onUplinkLoss?(fractionLost: number): void;
  /** the transport is gone (ICE/DTLS failure, peer closed, data channel closed); called at most once */
  onClosed(reason: AgentError): void;
}

export interface TransportConnectOptions {
  session: RealtimeSession;
  /** posts the offer to the service and returns the answer (ServiceClient.exchangeSdp) */
  exchangeSdp(offerSdp: string): Promise<string>;
  handlers: TransportHandlers;
  /** aborts a connect in progress (agent stopping, connect timeout) */
  signal?: AbortSignal;
}

export interface TransportLayer {
  /** Resolves once media and the data channel are up; rejects with an AgentError otherwise. */
  connect(opts: TransportConnectOptions): Promise<void>;
  /** Sends a client event (JSON) on the data channel; false when the channel is not open. Typed by the
   *  contract (protocol/events.ts): the agent cannot send an event the spec does not define. */
  send(event: ClientEvent): boolean;
  /** Sends one Opus frame of `samples` samples (48 kHz clock). Dropped while not connected. */
  sendAudio(opus: Buffer, samples: number): void;
  /** Closes the call so the peer sees it go (DTLS close + SCTP abort); idempotent. */
  close(): Promise<void>;
  /** Asks the peer whether it is still there (WebRTC: an ICE consent check on the selected pair); resolves
   *  true when it answered within about a second and a half. Optional: without it the liveness watchdog
   *  falls back to its silence timeout. */
  probe?(): Promise<boolean>;
  /** After connect() failed: what the next attempt will do differently (e.g. another TURN URL), for the error the
   *  agent reports; undefined when nothing. */
  failureNote?(): string | undefined;
  /** The connected call's route (undefined before ICE selected a pair). Optional: a transport without ICE has none. */
  route?(): CallRoute | undefined;
}

/** How a call's packets go: straight between the two ends, or through a TURN relay (either end's candidate of
 *  the selected pair is one): a relay adds a hop of latency, and its operator carries the (encrypted) media. */
export type CallRoute = 'direct' | 'relayed';

export type TransportFactory = () => TransportLayer;

// The real transport: a werift peer connection with one sendrecv Opus transceiver and the 'oai-events' data
// channel, offered by the device and answered by the service (spec section 4).
import { randomInt } from 'node:crypto';
import os from 'node:os';
import {
  RTCPeerConnection,
  RTCRtpCodecParameters,
  RtpHeader,
  RtpPacket,
  RtcpRrPacket,
  RtcpSrPacket,
  type RTCDataChannel,
  type RTCRtpTransceiver,
  type RTCIceServer,
} from 'werift';
import { DATA_CHANNEL_LABEL } from '../../protocol/events.js';
import type { IceServer } from '../../protocol/session.js';
import { OPUS_RTP } from '../../protocol/media.js';
import { AgentError } from '../errors.js';
import type { TurnRotation } from './turnRotation.js';
import type { CallRoute, TransportConnectOptions, TransportHandlers, TransportLayer } from './transportLayer.js';
import { certificateClockProblem } from '../../common/certificateClock.js';
import { certificateTrustProblem } from '../../common/certificateTrust.js';
import { dtlsKeys } from '../../common/webrtc/dtlsCertificate.js';
import type { ClientEvent } from '../../protocol/events.js';

export interface WebrtcTransportOptions {
  /** extra host addresses to gather, e.g. ['127.0.0.1'] when the server is on loopback */
  additionalHostAddresses?: string[];
  /** which of the session's TURN URLs this call relays through (shared by the calls of one agent) */
  turn?: TurnRotation;
}


/** The session's ICE servers, mapped exactly: an empty list stays empty (never werift's Google STUN default). */
export function toWeriftIceServers(servers: IceServer[]): RTCIceServer[] {
  return servers.map((s) => ({
    urls: [...s.urls],
    ...(s.username ? { username: s.username } : {}),
    ...(s.credential ? { credential: s.credential } : {}),
  }));
}

/** Why the call's TURN relay gave no candidate, in words (a certificate refused by a clock that is behind says so);
 *  undefined when it gave one or none was offered. */
function turnProblem(pc: RTCPeerConnection): string | undefined {
  const err = (pc.iceTransports[0]?.connection as unknown as IceConnectionInternals | undefined)?.speakerAgentTurnError;
  if (err === undefined) return undefined;
  const clock = certificateClockProblem(err);
  if (clock) return clock.replaceAll("the server's certificate", "the relay's certificate");
  const trust = certificateTrustProblem(err, { whose: "the relay's" });
  if (trust) return trust;
  // werift's STUN transaction errors carry their text in `str`, not `message`, and the relay's answer in `response`
  const e = err as { message?: unknown; code?: unknown; str?: unknown; response?: { getAttributeValue?(name: string): unknown } };
  const stunError = e.response?.getAttributeValue?.('ERROR-CODE');
  // a 401 to the request made with the credentials (werift retries the first, unauthenticated one itself): they
  // are wrong, or the session's short-term ones have expired (a patched werift: it used to time out instead)
  if (Array.isArray(stunError) && stunError[0] === 401) return `the relay refused the session's TURN username and credential (401 ${String(stunError[1] ?? '').trim() || 'Unauthorized'})`;
  const message = typeof e.message === 'string' && e.message ? e.message : typeof e.str === 'string' && e.str ? e.str : String(err);
  return typeof e.code === 'string' && !message.includes(e.code) ? `${message} (${e.code})` : message;
}

/** The parts of werift's ICE connection (0.24.4, not in its public types) a consent check needs. */
interface IceConnectionInternals {
  state: string;
  nominated?: {
    rtt?: number;
    /** werift's getter throws while the pair has no local candidate */
    localCandidate: unknown;
    remoteCandidate: { type: string };
    remoteAddr: readonly [string, number];
    protocol: { request(req: unknown, addr: readonly [string, number], key: Buffer, opts: { retransmissions: number; responseTimeout: number }): Promise<[StunAnswer, unknown]> };
  };
  localUsername: string;
  remoteUsername: string;
  remotePassword: string;
  /** why the TURN relay was not reached (scripts/patch-dependencies.mjs keeps it; werift only logged it) */
  speakerAgentTurnError?: unknown;
  iceControlling: boolean;
  buildRequest(o: { nominate: boolean; localUsername: string; remoteUsername: string; iceControlling: boolean; localCandidate: unknown }): unknown;
}

/** what the probe reads of a consent check's answer */
interface StunAnswer {
  getAttributeValue(name: 'XOR-MAPPED-ADDRESS'): readonly [string, number] | undefined;
}

export class WebrtcTransport implements TransportLayer {
  private pc: RTCPeerConnection | undefined;
  private dc: RTCDataChannel | undefined;
  private transceiver: RTCRtpTransceiver | undefined;
  private handlers: TransportHandlers | undefined;
  private connected = false;
  private closedReported = false;
  private closing = false;
  /** this device's address and port as the peer saw them in the last answered consent check */
  private mappedAddress: string | undefined;
  // Outgoing RTP state: random start values (RFC 3550), timestamps in samples of the 48 kHz clock.
  private seq = randomInt(0, 0x10000);
  private ts = randomInt(0, 0x1_0000_0000);
  private first = true;

  constructor(private readonly opts: WebrtcTransportOptions = {}) {}

  /** The peer connection (for tests checking its configuration). */
  get peerConnection(): RTCPeerConnection | undefined {
    return this.pc;
  }

  async connect(o: TransportConnectOptions): Promise<void> {
    this.handlers = o.handlers;
    const pc = new RTCPeerConnection({
      iceServers: toWeriftIceServers(this.opts.turn?.order(o.session.iceServers) ?? o.session.iceServers),
      // One transport for audio and the data channel from the offer on: werift otherwise gathers candidates (a
      // UDP socket per address) twice and drops the second set when the answer bundles.
      bundlePolicy: 'max-bundle',
      iceAdditionalHostAddresses: this.opts.additionalHostAddresses?.length ? this.opts.additionalHostAddresses : undefined,
      codecs: { audio: [new RTCRtpCodecParameters({ ...OPUS_RTP })], video: [] },
      dtls: { keys: dtlsKeys() },
    });
    this.pc = pc;
    const transceiver = pc.addTransceiver('audio', { direction: 'sendrecv' });
    this.transceiver = transceiver;
    const dc = pc.createDataChannel(DATA_CHANNEL_LABEL, { ordered: true });
    this.dc = dc;

    transceiver.onTrack.subscribe((track) => {
      track.onReceiveRtp.subscribe((rtp) => {
        if (this.closing) return;
        const h = rtp.header;
        this.handlers?.onAudio(
          { sequenceNumber: h.sequenceNumber, timestamp: h.timestamp, ssrc: h.ssrc, payload: rtp.payload, marker: h.marker },
          process.hrtime.bigint(),
        );
      });
    });
    transceiver.receiver.onRtcp.subscribe(() => this.handlers?.onActivity());
    // Receiver reports (alone or in a sender report) on our audio: how much of it the peer lost.
    transceiver.sender.onRtcp.subscribe((rtcp) => {
      if (this.closing || (rtcp.type !== RtcpRrPacket.type && rtcp.type !== RtcpSrPacket.type)) return;
      this.handlers?.onActivity();
      for (const r of (rtcp as RtcpRrPacket | RtcpSrPacket).reports) {
        if (r.ssrc === transceiver.sender.ssrc) this.handlers?.onUplinkLoss?.(r.fractionLost / 256);
      }
    });
    dc.onMessage.subscribe((data) => {
      if (!this.closing) this.handlers?.onMessage(data);
    });
    dc.stateChanged.subscribe((state) => {
      if (state === 'closed' && this.connected) this.reportClosed(new AgentError('call_failed', 'the peer closed the data channel'));
    });
    pc.connectionStateChange.subscribe((state) => {
      if ((state === 'failed' || state === 'closed') && this.connected) {
        this.reportClosed(new AgentError('call_failed', `the peer connection is ${state}`));
      }
    });

    const aborted = () => new AgentError('call_failed', 'connect aborted', { cause: o.signal?.reason });
    /** whether a failure now is ICE's (gathering, checks, DTLS), where a relay that was not reached is the news */
    let atIce = true;
    try {
      // werift's setLocalDescription waits for every candidate, a TURN server's too: one that does not answer holds
      // it ~6.3 s, and its TCP fallback to a host that drops packets ~2 minutes, past the connect timeout and a
      // SIGTERM's deadline. So the abort (connectTimeoutMs, the agent stopping) ends the wait; close() below.
      const offer = await pc.createOffer();
      if (o.signal?.aborted) throw aborted(); // before the gathering opens its sockets
      await untilAborted(pc.setLocalDescription(offer), o.signal, aborted);
      if (o.signal?.aborted) throw aborted();
      atIce = false;
      const answer = await o.exchangeSdp(pc.localDescription!.sdp);
      if (o.signal?.aborted) throw aborted();
      atIce = true;
      await pc.setRemoteDescription({ type: 'answer', sdp: answer });
      await this.waitUp(pc, dc, o.signal);
      this.connected = true;
      void this.probe(); // where the peer sees us now: what later probes compare with
    } catch (err) {
      const relayProblem = atIce ? turnProblem(pc) : undefined;
      await this.close();
      const tried = this.opts.turn?.current(o.session.iceServers);
      const next = this.opts.turn?.failed(o.session.iceServers);
      const relay = relayProblem ? `the TURN relay${tried ? ` ${tried}` : ''} was not reached: ${relayProblem}` : next ? `relayed through ${tried}` : undefined;
      this.note = next ? `${relay}; the next attempt tries ${next}` : relay;
      if (err instanceof AgentError) throw err;
      throw new AgentError('call_failed', `WebRTC setup failed: ${(err as Error).message}`, { cause: err });
    }
  }

  /** Waits for ICE+DTLS connected and the data channel open. */
  private waitUp(pc: RTCPeerConnection, dc: RTCDataChannel, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const subs: Array<{ unSubscribe: () => void }> = [];
      const done = (err?: Error) => {
        for (const s of subs) s.unSubscribe();
        signal?.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve();
      };
      const check = () => {
        if (pc.connectionState === 'failed' || pc.connectionState === 'closed') {
          done(new AgentError('call_failed', `ICE/DTLS ${pc.connectionState} while connecting`));
        } else if (pc.connectionState === 'connected' && dc.readyState === 'open') done();
      };
      const onAbort = () => done(new AgentError('call_failed', 'connect aborted', { cause: signal?.reason }));
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      subs.push(pc.connectionStateChange.subscribe(check));
      subs.push(dc.stateChanged.subscribe(check));
      check();
    });
  }

  send(event: ClientEvent): boolean {
    const dc = this.dc;
    if (!dc || dc.readyState !== 'open' || this.closing) return false;
    try {
      dc.send(JSON.stringify(event));
      return true;
    } catch {
      return false;
    }
  }

  sendAudio(opus: Buffer, samples: number): void {
    if (!this.connected || this.closing) return;
    const header = new RtpHeader({
      payloadType: OPUS_RTP.payloadType,
      sequenceNumber: this.seq,
      timestamp: this.ts,
      marker: this.first,
    });
    this.first = false;
    this.seq = (this.seq + 1) & 0xffff;
    this.ts = (this.ts + samples) >>> 0;
    // sendRtp only rejects if the DTLS transport broke mid-send: the connection-state handler reports that.
    this.transceiver!.sender.sendRtp(new RtpPacket(header, opus)).catch(() => undefined);
  }

  /** An ICE consent check (RFC 7675) on the selected pair, outside werift's own 5 s cadence: a live ICE agent
   *  answers at once, a killed or frozen one never does. Four tries, each waiting twice the pair's round trip
   *  plus 250 ms (at least 350 ms), so a lost packet or two on Wi-Fi is not a death.
   *  An answer that sees this device at another address or port than the last one (a new DHCP lease, the
   *  router's NAT mapping renewed) ends the call: the check went out from the new address and was answered
   *  there, but the peer's audio and data still go to the old one, and werift does not move the pair. Before,
   *  such a call stayed "connected" and silent, every probe answered, until the peer gave up (~30 s), or never. */
  async probe(): Promise<boolean> {
    const conn = this.pc?.iceTransports[0]?.connection as unknown as IceConnectionInternals | undefined;
    const pair = conn?.nominated;
    if (!conn || !pair || this.closing || conn.state === 'closed' || conn.state === 'failed') return false;
    const timeout = Math.max(350, Math.round((pair.rtt ?? 0) * 2000 + 250));
    for (let attempt = 0; attempt < 4 && !this.closing; attempt++) {
      const request = conn.buildRequest({
        nominate: false,
        localUsername: conn.localUsername,
        remoteUsername: conn.remoteUsername,
        iceControlling: conn.iceControlling,
        localCandidate: pair.localCandidate,
      });
      let answer: StunAnswer | undefined;
      try {
        [answer] = await pair.protocol.request(request, pair.remoteAddr, Buffer.from(conn.remotePassword, 'utf8'), {
          retransmissions: 0,
          responseTimeout: timeout,
        });
      } catch {
        continue; // no answer in time: try again
      }
      const mapped = answer?.getAttributeValue('XOR-MAPPED-ADDRESS');
      if (mapped) {
        const seenAt = `${mapped[0]}:${mapped[1]}`;
        // The old address still this device's (a second address, IPv6 privacy addresses rotating): the sockets
        // listen on every address, so the peer's audio still arrives there; only the baseline moves.
        if (this.mappedAddress !== undefined && seenAt !== this.mappedAddress && !isOwnAddress(this.mappedAddress)) {
          this.reportClosed(
            new AgentError('call_failed', `this device's address as the peer sees it moved (${this.mappedAddress} -> ${seenAt}: a new DHCP lease, or the router's NAT renewed its mapping); the peer's audio goes to the old one`),
          );
          return false;
        }
        this.mappedAddress = seenAt;
      }
      return true;
    }
    return false;
  }

  private note: string | undefined;

  failureNote(): string | undefined {
    return this.note;
  }

  route(): CallRoute | undefined {
    const pair = (this.pc?.iceTransports[0]?.connection as unknown as IceConnectionInternals | undefined)?.nominated;
    if (!pair) return undefined;
    try {
      const local = (pair.localCandidate as { type: string }).type;
      return local === 'relay' || pair.remoteCandidate.type === 'relay' ? 'relayed' : 'direct';
    } catch {
      return undefined;
    }
  }

  private reportClosed(reason: AgentError): void {
    if (this.closedReported || this.closing) return;
    this.closedReported = true;
    this.handlers?.onClosed(reason);
  }

  private closePromise: Promise<void> | undefined;

  /** Idempotent: every caller waits for the same close. */
  close(): Promise<void> {
    this.closePromise ??= this.doClose();
    return this.closePromise;
  }

  private async doClose(): Promise<void> {
    this.closing = true;
    const pc = this.pc;
    this.handlers = undefined;
    if (!pc) return;
    // werift's pc.close() tears DTLS down before SCTP, so its SCTP ABORT is never sent and the server would
    // only notice after its consent timeout (~30 s). Stopping SCTP first sends the ABORT while DTLS is up:
    // the server sees the device go at once. Bounded so a stuck socket cannot hang stop().
    const bounded = (p: Promise<unknown>) => Promise.race([p.catch(() => undefined), new Promise((r) => setTimeout(r, 500).unref())]);
    await bounded(pc.sctpTransport?.stop() ?? Promise.resolve());
    await bounded(pc.close());
    this.pc = undefined;
    this.dc = undefined;
    this.transceiver = undefined;
  }
}

/** `p`, or the abort's error as soon as `signal` aborts (p itself runs on; its result is dropped). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined, error: () => Error): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) {
    p.catch(() => undefined); // its failure, later, is nobody's
    return Promise.reject(error());
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(error());
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Whether "host:port" (as XOR-MAPPED-ADDRESS gave it) is an address of one of this machine's interfaces. */
function isOwnAddress(hostPort: string): boolean {
  const host = hostPort.slice(0, hostPort.lastIndexOf(':'));
  return Object.values(os.networkInterfaces()).some((list) => list?.some((a) => a.address === host));
}


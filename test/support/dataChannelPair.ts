// Two real werift peers in this process joined by one data channel over loopback: the sender's channel, what the
// receiver got, and the sender's SCTP association (werift internals, typed here for the tests that look inside).
import { RTCPeerConnection, type RTCDataChannel } from 'werift';
import { waitUntil } from './audioCapture.js';

/** The parts of werift's SCTP association the regression tests read. */
export interface SctpInternals {
  outboundQueue: unknown[];
  flush: { event: { stack: unknown[] } };
  /** the retransmission timeout, s */
  rto: number;
  /** bytes sent and not yet acknowledged (0: every message's SACK came) */
  flightSize: number;
  /** messages sent and not yet acknowledged cumulatively */
  sentQueue: unknown[];
  /** takes one received SCTP packet (DTLS already removed) */
  handleData(packet: Buffer): unknown;
}

export interface DataChannelPair {
  sender: RTCPeerConnection;
  receiver: RTCPeerConnection;
  channel: RTCDataChannel;
  /** messages the receiver got, in order */
  received: string[];
  sctp: SctpInternals;
  /** the receiver's SCTP association */
  receiverSctp: SctpInternals;
  close(): Promise<void>;
}

/** `initialTsn`: the sender's first SCTP sequence number (werift picks one at random), to place a test's messages
 *  at a boundary such as the wrap at 2^32. */
export async function dataChannelPair(opts: { initialTsn?: number } = {}): Promise<DataChannelPair> {
  const config = { iceServers: [], iceAdditionalHostAddresses: ['127.0.0.1'] };
  const sender = new RTCPeerConnection(config);
  const receiver = new RTCPeerConnection(config);
  const received: string[] = [];
  receiver.onDataChannel.subscribe((ch) => ch.onMessage.subscribe((m) => received.push(m.toString())));
  const channel = sender.createDataChannel('oai-events');
  await sender.setLocalDescription(await sender.createOffer());
  if (opts.initialTsn !== undefined) setInitialTsn(sender, opts.initialTsn);
  await receiver.setRemoteDescription(sender.localDescription!);
  await receiver.setLocalDescription(await receiver.createAnswer());
  await sender.setRemoteDescription(receiver.localDescription!);
  await waitUntil(() => sender.connectionState === 'connected' && channel.readyState === 'open', 10_000, 'the data channel to open');
  const sctp = (sender.sctpTransport as unknown as { sctp: SctpInternals }).sctp;
  return {
    sender,
    receiver,
    channel,
    received,
    sctp,
    receiverSctp: (receiver.sctpTransport as unknown as { sctp: SctpInternals }).sctp,
    close: async () => {
      await sender.close();
      await receiver.close();
    },
  };
}

/** Sets a peer's first SCTP sequence number (werift picks one at random). Call it once the peer has both its local
 *  description and a data channel, before its association's INIT (which carries it) goes out; the counters werift
 *  derives from it at construction follow. */
export function setInitialTsn(pc: RTCPeerConnection, initialTsn: number): void {
  const s = (pc.sctpTransport as unknown as { sctp: Record<string, number> }).sctp;
  const previous = (initialTsn + 2 ** 32 - 1) % 2 ** 32;
  Object.assign(s, { localTsn: initialTsn, lastSackedTsn: previous, advancedPeerAckTsn: previous, reconfigRequestSeq: initialTsn });
}

/** The association loses the first DATA packet it receives that `match` accepts (SCTP chunk type 0 right after the
 *  12-byte common header; the packet is handed over without DTLS). `lost` says whether it happened; `dataAfter` counts
 *  the DATA packets received after it. */
export function loseDataOnce(sctp: SctpInternals, match: (packet: Buffer) => boolean = () => true): { lost: boolean; dataAfter: number } {
  const handle = sctp.handleData.bind(sctp);
  const link = { lost: false, dataAfter: 0 };
  sctp.handleData = (packet: Buffer) => {
    if (packet.length > 12 && packet[12] === 0) {
      if (!link.lost && match(packet)) {
        link.lost = true;
        return undefined;
      }
      if (link.lost) link.dataAfter++;
    }
    return handle(packet);
  };
  return link;
}

/** Counts the association's retransmission timeouts (werift arms its timer with this property when it starts it). */
export function countTimeouts(sctp: SctpInternals): { n: number } {
  const count = { n: 0 };
  const internals = sctp as unknown as { timer3Expired: () => void };
  const expired = internals.timer3Expired;
  internals.timer3Expired = () => {
    count.n++;
    expired();
  };
  return count;
}

/** From now on the association loses `share` of the SCTP packets it receives and of those it sends, chosen by a
 *  seeded generator, one for both directions (the same sequence of choices every run; which packets they fall on
 *  follows the timing). `stop()` ends the loss. */
export function loseAtRandom(sctp: SctpInternals, share: number, seed = 1): { received: number; sent: number; lostIn: number; lostOut: number; stop(): void } {
  let state = seed >>> 0;
  // mulberry32
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  const internals = sctp as unknown as { transport: { send(packet: Buffer): Promise<unknown> } };
  const handle = sctp.handleData.bind(sctp);
  const send = internals.transport.send;
  const link = { received: 0, sent: 0, lostIn: 0, lostOut: 0, stop: () => undefined as void };
  let on = true;
  sctp.handleData = (packet: Buffer) => {
    link.received++;
    if (on && random() < share) return void link.lostIn++;
    return handle(packet);
  };
  internals.transport.send = (packet: Buffer) => {
    link.sent++;
    if (on && random() < share) return Promise.resolve(void link.lostOut++);
    return send(packet);
  };
  link.stop = () => {
    on = false;
  };
  return link;
}

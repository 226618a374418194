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
  if (opts.initialTsn !== undefined) {
    // before the association's INIT, which carries it; the counters werift derives from it at construction follow
    const s = (sender.sctpTransport as unknown as { sctp: Record<string, number> }).sctp;
    const previous = (opts.initialTsn + 2 ** 32 - 1) % 2 ** 32;
    Object.assign(s, { localTsn: opts.initialTsn, lastSackedTsn: previous, advancedPeerAckTsn: previous, reconfigRequestSeq: opts.initialTsn });
  }
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

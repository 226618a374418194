// One werift answerer per call: an Opus transceiver each way and the `oai-events` data channel the client creates.
// Non-trickle: the answer is returned only once ICE gathering is complete, so it carries the server's candidates.
import { RTCPeerConnection, RTCRtpCodecParameters, type RTCDataChannel, type RTCRtpTransceiver, type RtpPacket } from 'werift';
import { DATA_CHANNEL_LABEL } from '../../protocol/events.js';
import type { IceServer } from '../../protocol/session.js';
import { OPUS_RTP } from '../../protocol/media.js';
import { dtlsKeys } from '../../common/webrtc/dtlsCertificate.js';
import { CodedError } from '../../common/errors.js';

export interface CallPeerOptions {
  iceServers: IceServer[];
  /** extra host addresses to gather (127.0.0.1 when the server is bound to loopback: werift skips it otherwise) */
  additionalHostAddresses: string[];
}

export interface CallPeerHandler {
  audio(payload: Buffer): void;
  channelOpen(): void;
  message(text: string): void;
  /** the transport failed or closed; the call should end */
  ended(reason: string): void;
  connected(): void;
}

export class CallPeerError extends CodedError<'invalid_sdp' | 'no_audio_in_offer'> {
  override name = 'CallPeerError';
}

export class CallPeer {
  private readonly pc: RTCPeerConnection;
  private readonly transceiver: RTCRtpTransceiver;
  private channel: RTCDataChannel | undefined;
  private closed = false;

  constructor(
    opts: CallPeerOptions,
    private readonly handler: CallPeerHandler,
  ) {
    this.pc = new RTCPeerConnection({
      // werift falls back to a public STUN server when given none: always pass the configured list, even [].
      iceServers: opts.iceServers.map((s) => ({ urls: s.urls, username: s.username || undefined, credential: s.credential || undefined })),
      iceAdditionalHostAddresses: opts.additionalHostAddresses.length ? opts.additionalHostAddresses : undefined,
      iceUseIpv6: false,
      dtls: { keys: dtlsKeys() },
      codecs: {
        audio: [new RTCRtpCodecParameters({ ...OPUS_RTP })],
        video: [],
      },
    });
    // Added before the offer is applied so werift matches the offer's audio section to it (sendrecv).
    this.transceiver = this.pc.addTransceiver('audio', { direction: 'sendrecv' });
    this.pc.onTrack.subscribe((track) => {
      if (track.kind !== 'audio') return;
      track.onReceiveRtp.subscribe((rtp) => {
        if (!this.closed) this.handler.audio(rtp.payload);
      });
    });
    this.pc.onDataChannel.subscribe((channel) => this.attachChannel(channel));
    this.pc.connectionStateChange.subscribe((state) => {
      if (state === 'connected') this.handler.connected();
      else if (state === 'failed' || state === 'closed') this.handler.ended(`connection ${state}`);
    });
  }

  /** Applies the offer and returns the answer SDP with the server's ICE candidates. */
  async answer(offerSdp: string): Promise<string> {
    try {
      await this.pc.setRemoteDescription({ type: 'offer', sdp: offerSdp });
    } catch (err) {
      const msg = (err as Error).message ?? String(err);
      if (/negotiate codecs/i.test(msg)) throw new CallPeerError('no_audio_in_offer', 'the offer has no Opus audio the server can use', { cause: err });
      throw new CallPeerError('invalid_sdp', `the SDP offer could not be applied: ${msg}`, { cause: err });
    }
    if (!this.transceiver.mid) throw new CallPeerError('no_audio_in_offer', 'the offer has no audio section the server can answer');
    const answer = await this.pc.createAnswer();
    await this.pc.setLocalDescription(answer); // resolves after gathering
    const sdp = this.pc.localDescription?.sdp;
    if (!sdp) throw new Error('werift produced no local description');
    return sdp;
  }

  sendRtp(packet: RtpPacket): void {
    if (this.closed) return;
    this.transceiver.sender.sendRtp(packet).catch(() => undefined); // a send on a closing transport is not an error
  }

  /** Sends a text message on `oai-events`; false when the channel is not open. */
  sendText(text: string): boolean {
    const ch = this.channel;
    if (!ch || ch.readyState !== 'open' || this.closed) return false;
    try {
      ch.send(text);
      return true;
    } catch {
      return false;
    }
  }

  get connectionState(): string {
    return this.pc.connectionState;
  }

  /** Ends the call so the device knows at once: werift's pc.close() tears DTLS down before SCTP, so no SCTP
   *  ABORT would reach the device, which would then notice only through its liveness checks. Stopping SCTP first
   *  sends the ABORT while DTLS is up (the agent closes its side the same way). Bounded: a stuck transport
   *  cannot hold up a server shutdown. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const bounded = (p: Promise<unknown> | undefined) =>
      Promise.race([(p ?? Promise.resolve()).catch(() => undefined), new Promise((r) => setTimeout(r, 500).unref())]);
    await bounded(this.pc.sctpTransport?.stop());
    await bounded(this.pc.close());
  }

  private attachChannel(channel: RTCDataChannel): void {
    // Only the protocol's channel carries events; others are accepted by SCTP but ignored.
    if (channel.label !== DATA_CHANNEL_LABEL || this.channel) return;
    this.channel = channel;
    channel.onMessage.subscribe((data) => {
      if (!this.closed) this.handler.message(typeof data === 'string' ? data : data.toString('utf8'));
    });
    if (channel.readyState === 'open') this.handler.channelOpen();
    else {
      channel.stateChanged.subscribe((state) => {
        if (state === 'open') this.handler.channelOpen();
      });
    }
    // A device that leaves sends an SCTP ABORT, which closes the channel but leaves werift's connectionState
    // at 'connected' until the consent timeout (~30 s): the protocol channel closing is the peer going.
    channel.stateChanged.subscribe((state) => {
      if (state === 'closed' && !this.closed) this.handler.ended('data channel closed');
    });
  }
}

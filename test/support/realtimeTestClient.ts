// A real WebRTC client doing exactly what a device does against /v1/realtime: POST a session, create a werift
// offer with an Opus track each way and the `oai-events` data channel, POST the SDP, apply the answer. It sends
// Opus every 20 ms (a clip when asked, silence otherwise, as a device's microphone would) and records every
// server event and every received audio packet (decoded, with its level).
import { RTCPeerConnection, RTCRtpCodecParameters, RtpHeader, RtpPacket, type RTCDataChannel, type RTCRtpTransceiver } from 'werift';
import { OpusFrameDecoder, OpusFrameEncoder } from '../../src/common/audio/opusCodec.js';
import { rmsDbfs } from '../../src/common/audio/signal.js';
import { DATA_CHANNEL_LABEL, parseServerEvent, type ServerEvent } from '../../src/protocol/events.js';
import { parseRealtimeSession, type RealtimeSession } from '../../src/protocol/session.js';

const FRAME = 960;

export interface ReceivedAudio {
  packets: number;
  /** packets whose decoded level is above -50 dBFS */
  audiblePackets: number;
  /** performance.now() of the first audible packet after markAudio() */
  firstAudibleAt?: number;
}

export interface TimedEvent {
  at: number;
  event: ServerEvent;
}

export class RealtimeTestClient {
  readonly events: TimedEvent[] = [];
  readonly badMessages: string[] = [];
  readonly audio: ReceivedAudio = { packets: 0, audiblePackets: 0 };
  private waiters: { pred: (e: ServerEvent) => boolean; resolve: (e: ServerEvent) => void }[] = [];
  private readonly encoder = new OpusFrameEncoder();
  private readonly silence: Buffer;
  private readonly decoder = new OpusFrameDecoder();
  private queue: Int16Array | undefined;
  private encodedQueue: Buffer[] | undefined;
  private queuePos = 0;
  private clipDone: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private seq = 1000;
  private ts = 5000;
  private nextAt = 0;
  private closed = false;
  /** performance.now() of the last markAudio() */
  markedAt = 0;
  /** the Location header of the SDP answer (GA calls: /v1/realtime/calls/{call_id}) */
  location: string | undefined;
  sending = true;
  private decode = true;

  private constructor(
    readonly pc: RTCPeerConnection,
    private readonly transceiver: RTCRtpTransceiver,
    readonly channel: RTCDataChannel,
    readonly session: RealtimeSession | undefined,
  ) {
    this.silence = this.encoder.encode(new Int16Array(FRAME));
    channel.onMessage.subscribe((data) => {
      const text = typeof data === 'string' ? data : data.toString('utf8');
      const r = parseServerEvent(text);
      if (!r.ok) {
        this.badMessages.push(text);
        return;
      }
      this.events.push({ at: performance.now(), event: r.event });
      this.waiters = this.waiters.filter((w) => {
        if (!w.pred(r.event)) return true;
        w.resolve(r.event);
        return false;
      });
    });
  }

  static async connect(opts: {
    baseUrl: string;
    headers: Record<string, string>;
    /** false: post the SDP without creating a session first */
    createSession?: boolean;
    /** false: count received packets without decoding them (load benchmarks) */
    decode?: boolean;
    /** how long the data channel may take to open (default 15 s) */
    openTimeoutMs?: number;
    /** a GA call: POST /v1/realtime/calls with this client key (Bearer), expecting 201 and a Location */
    gaKey?: string;
  }): Promise<RealtimeTestClient> {
    let session: RealtimeSession | undefined;
    if (opts.createSession !== false && opts.gaKey === undefined) {
      const res = await fetch(`${opts.baseUrl}/v1/realtime/sessions`, {
        method: 'POST',
        headers: { ...opts.headers, 'content-type': 'application/json' },
        body: JSON.stringify({ modalities: ['audio', 'text'] }),
      });
      if (res.status !== 200) throw new Error(`session: HTTP ${res.status} ${await res.text()}`);
      session = parseRealtimeSession(await res.json());
      if (!session) throw new Error('session: malformed body');
    }
    const pc = new RTCPeerConnection({
      iceServers: session?.iceServers ?? [],
      iceAdditionalHostAddresses: ['127.0.0.1'],
      iceUseIpv6: false,
      codecs: {
        audio: [new RTCRtpCodecParameters({ mimeType: 'audio/opus', clockRate: 48_000, channels: 2, payloadType: 111 })],
        video: [],
      },
    });
    const transceiver = pc.addTransceiver('audio', { direction: 'sendrecv' });
    const channel = pc.createDataChannel(DATA_CHANNEL_LABEL);
    const client = new RealtimeTestClient(pc, transceiver, channel, session);
    client.decode = opts.decode !== false;
    pc.onTrack.subscribe((track) => track.onReceiveRtp.subscribe((rtp) => client.onRtp(rtp.payload)));
    await pc.setLocalDescription(await pc.createOffer());
    const ga = opts.gaKey !== undefined;
    const res = await fetch(`${opts.baseUrl}/v1/realtime${ga ? '/calls' : ''}`, {
      method: 'POST',
      headers: { ...(ga ? { authorization: `Bearer ${opts.gaKey}` } : opts.headers), 'content-type': 'application/sdp' },
      body: pc.localDescription!.sdp,
    });
    const text = await res.text();
    client.location = res.headers.get('location') ?? undefined;
    if (res.status !== (ga ? 201 : 200)) {
      await pc.close();
      throw new Error(`sdp: HTTP ${res.status} ${text}`);
    }
    await pc.setRemoteDescription({ type: 'answer', sdp: text });
    await new Promise<void>((resolve, reject) => {
      const ms = opts.openTimeoutMs ?? 15_000;
      const t = setTimeout(() => reject(new Error(`data channel did not open within ${ms} ms`)), ms);
      const done = () => {
        clearTimeout(t);
        resolve();
      };
      if (channel.readyState === 'open') done();
      else channel.stateChanged.subscribe((s) => s === 'open' && done());
    });
    client.startSending();
    return client;
  }

  /** Queues a 48 kHz clip on the microphone; resolves when its last frame was sent. */
  play(pcm48k: Int16Array): Promise<void> {
    this.queue = pcm48k;
    this.queuePos = 0;
    return new Promise((resolve) => (this.clipDone = resolve));
  }

  /** Queues pre-encoded 20 ms Opus packets (no encoding cost in the client: load benchmarks). */
  playEncoded(packets: Buffer[]): Promise<void> {
    this.encodedQueue = packets.slice();
    return new Promise((resolve) => (this.clipDone = resolve));
  }

  /** Resets the "first audible packet" mark (e.g. at the end of the user's speech). */
  markAudio(): void {
    this.markedAt = performance.now();
    this.audio.firstAudibleAt = undefined;
  }

  send(event: unknown): void {
    this.channel.send(typeof event === 'string' ? event : JSON.stringify(event));
  }

  waitFor<T extends ServerEvent['type']>(
    type: T,
    pred: (e: Extract<ServerEvent, { type: T }>) => boolean = () => true,
    timeoutMs = 20_000,
    /** also match events already received */
    includePast = false,
  ): Promise<Extract<ServerEvent, { type: T }>> {
    const match = (e: ServerEvent) => e.type === type && pred(e as Extract<ServerEvent, { type: T }>);
    if (includePast) {
      const past = this.events.find((t) => match(t.event));
      if (past) return Promise.resolve(past.event as Extract<ServerEvent, { type: T }>);
    }
    return new Promise((resolve, reject) => {
      const w = { pred: match, resolve: (e: ServerEvent) => (clearTimeout(t), resolve(e as Extract<ServerEvent, { type: T }>)) };
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        reject(new Error(`no ${type} within ${timeoutMs} ms; got: ${this.events.map((x) => x.event.type).join(', ')}`));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  eventsOf<T extends ServerEvent['type']>(type: T): Extract<ServerEvent, { type: T }>[] {
    return this.events.filter((t) => t.event.type === type).map((t) => t.event as Extract<ServerEvent, { type: T }>);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.pc.close();
  }

  private onRtp(payload: Buffer): void {
    this.audio.packets++;
    if (!this.decode) return;
    const pcm = this.decoder.decode(payload);
    if (rmsDbfs(pcm) > -50) {
      this.audio.audiblePackets++;
      if (this.audio.firstAudibleAt === undefined && performance.now() >= this.markedAt) this.audio.firstAudibleAt = performance.now();
    }
  }

  private startSending(): void {
    this.nextAt = performance.now();
    const tick = () => {
      if (this.closed) return;
      while (performance.now() >= this.nextAt) {
        this.sendFrame();
        this.nextAt += 20;
      }
      this.timer = setTimeout(tick, Math.max(0, this.nextAt - performance.now()));
    };
    tick();
  }

  private sendFrame(): void {
    let payload = this.silence;
    if (this.encodedQueue) {
      payload = this.encodedQueue.shift() ?? this.silence;
      if (this.encodedQueue.length === 0) {
        this.encodedQueue = undefined;
        const done = this.clipDone;
        this.clipDone = undefined;
        done?.();
      }
    } else if (this.queue) {
      const frame = new Int16Array(FRAME);
      frame.set(this.queue.subarray(this.queuePos, this.queuePos + FRAME));
      this.queuePos += FRAME;
      payload = this.encoder.encode(frame);
      if (this.queuePos >= this.queue.length) {
        this.queue = undefined;
        const done = this.clipDone;
        this.clipDone = undefined;
        done?.();
      }
    }
    if (!this.sending) return;
    const header = new RtpHeader({ payloadType: 111, sequenceNumber: this.seq, timestamp: this.ts, marker: false });
    this.seq = (this.seq + 1) & 0xffff;
    this.ts = (this.ts + FRAME) >>> 0;
    this.transceiver.sender.sendRtp(new RtpPacket(header, payload)).catch(() => undefined);
  }
}

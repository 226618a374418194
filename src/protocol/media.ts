// The media both peers exchange (spec section 4): Opus over RTP at 48 kHz, 20 ms mono frames. Every device,
// codec and peer on either side uses these; nothing else writes the numbers down.

export const SAMPLE_RATE = 48_000;
export const CHANNELS = 1;
export const FRAME_MS = 20;
/** SAMPLE_RATE * FRAME_MS / 1000, kept a literal type for the RTP timestamp step. */
export const FRAME_SAMPLES = 960;

/** The Opus RTP codec both peers negotiate: stereo in SDP as RFC 7587 requires (the audio is mono), FEC on. */
export const OPUS_RTP = {
  mimeType: 'audio/opus',
  clockRate: SAMPLE_RATE,
  channels: 2,
  payloadType: 111,
  parameters: 'minptime=10;useinbandfec=1',
} as const;

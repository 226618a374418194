// Checks an SDP offer before it reaches werift, so a bad offer is a 400 with a precise reason instead of a
// werift exception: it must be SDP text, carry ICE and DTLS parameters, and have an audio section with Opus.
import { OPUS_RTP } from '../../protocol/media.js';

export type OfferCheck =
  | { ok: true; sdp: string }
  | { ok: false; code: 'invalid_sdp' | 'no_audio_in_offer'; message: string };

const MAX_SDP_BYTES = 64 * 1024;
const OPUS_RTPMAP = new RegExp(`^a=rtpmap:\\d+ opus/${OPUS_RTP.clockRate}`, 'i');

export function checkOffer(body: unknown): OfferCheck {
  const text = typeof body === 'string' ? body : Buffer.isBuffer(body) ? body.toString('utf8') : '';
  if (text.trim() === '') return { ok: false, code: 'invalid_sdp', message: 'the SDP offer is empty' };
  if (text.length > MAX_SDP_BYTES) return { ok: false, code: 'invalid_sdp', message: `the SDP offer is larger than ${MAX_SDP_BYTES} bytes` };
  // Clients send \r\n; tolerate bare \n (hand-written offers) and normalise for werift.
  const lines = text.replace(/\r\n/g, '\n').split('\n').map((l) => l.trim()).filter((l) => l !== '');
  if (lines[0] !== 'v=0') return { ok: false, code: 'invalid_sdp', message: 'the body is not an SDP offer (it must start with "v=0")' };
  if (!lines.every((l) => /^[a-z]=/.test(l))) {
    const bad = lines.find((l) => !/^[a-z]=/.test(l)) ?? '';
    return { ok: false, code: 'invalid_sdp', message: `malformed SDP line "${bad.slice(0, 40)}"` };
  }
  if (!lines.some((l) => l.startsWith('m='))) return { ok: false, code: 'no_audio_in_offer', message: 'the SDP offer has no media section' };

  // Split into media sections and find an audio one that offers Opus and is not rejected (port 0).
  const sections: string[][] = [];
  for (const l of lines) {
    if (l.startsWith('m=')) sections.push([l]);
    else if (sections.length) sections[sections.length - 1].push(l);
  }
  const session = lines.slice(0, lines.findIndex((l) => l.startsWith('m=')));
  const audio = sections.find((s) => /^m=audio [1-9]\d* /.test(s[0]));
  if (!audio) return { ok: false, code: 'no_audio_in_offer', message: 'the SDP offer has no audio section' };
  if (!audio.some((l) => OPUS_RTPMAP.test(l))) {
    return { ok: false, code: 'no_audio_in_offer', message: `the audio section does not offer the Opus codec (opus/${OPUS_RTP.clockRate})` };
  }
  const has = (prefix: string) => audio.some((l) => l.startsWith(prefix)) || session.some((l) => l.startsWith(prefix));
  if (!has('a=ice-ufrag:') || !has('a=ice-pwd:')) return { ok: false, code: 'invalid_sdp', message: 'the SDP offer has no ICE credentials (a=ice-ufrag / a=ice-pwd)' };
  if (!has('a=fingerprint:')) return { ok: false, code: 'invalid_sdp', message: 'the SDP offer has no DTLS fingerprint (a=fingerprint)' };
  return { ok: true, sdp: lines.join('\r\n') + '\r\n' };
}

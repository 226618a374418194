// Small pure pieces of the realtime service: offer checks, session claiming, speech chunking, event families.
import { describe, expect, it, vi } from 'vitest';
import { speechChunks } from '../../../src/companion/realtime/conversation.js';
import { EventWriter } from '../../../src/companion/realtime/eventWriter.js';
import { checkOffer } from '../../../src/companion/realtime/sdpOffer.js';
import { SessionRegistry } from '../../../src/companion/realtime/sessionRegistry.js';
import { parseServerEvent } from '../../../src/protocol/events.js';

const OFFER = [
  'v=0', 'o=- 1 2 IN IP4 127.0.0.1', 's=-', 't=0 0', 'a=group:BUNDLE 0',
  'm=audio 9 UDP/TLS/RTP/SAVPF 111', 'c=IN IP4 0.0.0.0', 'a=ice-ufrag:abcd', 'a=ice-pwd:0123456789abcdef012345',
  'a=fingerprint:sha-256 AA:BB', 'a=setup:actpass', 'a=mid:0', 'a=sendrecv', 'a=rtpmap:111 opus/48000/2',
].join('\r\n');

describe('checkOffer', () => {
  it('accepts an Opus audio offer (also with bare \\n line ends) and normalises it to CRLF', () => {
    const r = checkOffer(OFFER.replace(/\r\n/g, '\n'));
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.sdp).toBe(OFFER + '\r\n');
  });
  it.each([
    [undefined, 'invalid_sdp', /empty/],
    ['   ', 'invalid_sdp', /empty/],
    ['{"sdp":"v=0"}', 'invalid_sdp', /v=0/],
    ['v=0\r\nnot an sdp line', 'invalid_sdp', /malformed/],
    ['v=0\r\ns=-', 'no_audio_in_offer', /no media/],
    [OFFER.replace('m=audio 9', 'm=video 9'), 'no_audio_in_offer', /no audio/],
    [OFFER.replace('m=audio 9', 'm=audio 0'), 'no_audio_in_offer', /no audio/],
    [OFFER.replace('opus/48000/2', 'PCMU/8000'), 'no_audio_in_offer', /Opus/],
    [OFFER.replace(/a=ice-pwd:.*\r\n/, ''), 'invalid_sdp', /ICE/],
    [OFFER.replace(/a=fingerprint:.*\r\n/, ''), 'invalid_sdp', /fingerprint/],
  ])('refuses %j', (body, code, msg) => {
    const r = checkOffer(body);
    expect(r).toMatchObject({ ok: false, code });
    if (!r.ok) expect(r.message).toMatch(msg);
  });
});

describe('SessionRegistry', () => {
  it('a client claims its newest unexpired session once; without one it gets an implicit session', () => {
    const reg = new SessionRegistry(1000);
    const a = reg.create('w', 'c1', ['audio'], 0);
    const b = reg.create('w', 'c1', ['audio', 'text'], 10);
    reg.create('w', 'c2', ['audio'], 10);
    expect(reg.claim('w', 'c1', 20).id).toBe(b.id);
    expect(reg.claim('w', 'c1', 20).id).toBe(a.id);
    const implicit = reg.claim('w', 'c1', 20);
    expect(implicit.implicit).toBe(true);
    expect(reg.size).toBe(1); // c2's; implicit sessions are not stored
    expect(reg.claim('w', 'c2', 2000).implicit).toBe(true); // expired
    expect(reg.size).toBe(0);
  });
  // Date.now is a spy here (a fake: the machine's clock is not the test's to set)
  it('regression: a wall clock stepping forward between POST /sessions and the call (NTP syncing on a board without an RTC) expired the session; it is claimed', () => {
    const reg = new SessionRegistry(60_000);
    const realNow = Date.now.bind(Date);
    try {
      const s = reg.create('w', 'c1', ['audio']);
      vi.spyOn(Date, 'now').mockImplementation(() => realNow() + 90 * 86_400_000);
      const claimed = reg.claim('w', 'c1');
      expect(claimed.implicit).toBe(false);
      expect(claimed.id).toBe(s.id);
    } finally {
      vi.restoreAllMocks();
    }
  });
  it('bounds the number of stored sessions', () => {
    const reg = new SessionRegistry(60_000, 3);
    for (let i = 0; i < 5; i++) reg.create('w', `c${i}`, ['audio'], i);
    expect(reg.size).toBe(3);
  });
});

describe('speechChunks', () => {
  it('keeps short text whole and splits long text at sentence ends, with offsets', () => {
    expect(speechChunks('Hello! How can I help?')).toEqual([{ text: 'Hello! How can I help?', offset: 0 }]);
    const text = 'The kite flew over the hill and far away. '.repeat(20);
    const parts = speechChunks(text);
    expect(parts.length).toBeGreaterThan(2);
    expect(parts.map((p) => p.text).join('')).toBe(text);
    for (const p of parts) {
      expect(text.slice(p.offset, p.offset + p.text.length)).toBe(p.text);
      expect(p.text.length).toBeLessThanOrEqual(260);
    }
  });
});

describe('EventWriter', () => {
  it('emits schema-valid events with unique ids, in the configured transcript family', () => {
    for (const [family, prefix] of [['ga', 'response.output_audio_transcript'], ['legacy', 'response.audio_transcript']] as const) {
      const lines: string[] = [];
      const w = new EventWriter((j) => lines.push(j), family);
      w.transcriptDelta('r', 'i', 'Hel');
      w.transcriptDone('r', 'i', 'Hello');
      w.error('unknown_event', 'nope', 'evt_9');
      const parsed = lines.map((l) => parseServerEvent(l));
      expect(parsed.every((p) => p.ok)).toBe(true);
      expect(parsed.map((p) => (p.ok ? p.event.type : ''))).toEqual([`${prefix}.delta`, `${prefix}.done`, 'error']);
      expect(new Set(lines.map((l) => JSON.parse(l).event_id)).size).toBe(3);
    }
  });
});

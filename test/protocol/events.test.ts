import { describe, expect, it } from 'vitest';
import { assistantTranscriptOf, parseClientEvent, parseServerEvent } from '../../src/protocol/events.js';

describe('parseServerEvent', () => {
  it('accepts a function_call output item with every field of the spec', () => {
    const r = parseServerEvent(
      JSON.stringify({
        type: 'response.output_item.done',
        item: { type: 'function_call', id: 'item_1', call_id: 'call_1', name: 'set_device_volume', arguments: '{"volume_level":40}' },
      }),
    );
    expect(r.ok).toBe(true);
    if (r.ok && r.event.type === 'response.output_item.done' && r.event.item.type === 'function_call') {
      expect(r.event.item.call_id).toBe('call_1');
      expect(JSON.parse(r.event.item.arguments)).toEqual({ volume_level: 40 });
    } else {
      throw new Error('expected a function_call item');
    }
  });

  it('reads the user transcript event', () => {
    const r = parseServerEvent({ type: 'conversation.item.input_audio_transcription.completed', transcript: 'hello there' });
    expect(r).toMatchObject({ ok: true, event: { transcript: 'hello there' } });
  });

  it('maps both assistant transcript families to the same role', () => {
    for (const [delta, done] of [
      ['response.output_audio_transcript.delta', 'response.output_audio_transcript.done'],
      ['response.audio_transcript.delta', 'response.audio_transcript.done'],
    ]) {
      const d = parseServerEvent({ type: delta, delta: 'Volu' });
      const f = parseServerEvent({ type: done, transcript: 'Volume set.' });
      expect(d.ok && assistantTranscriptOf(d.event)).toEqual({ phase: 'delta', text: 'Volu' });
      expect(f.ok && assistantTranscriptOf(f.event)).toEqual({ phase: 'done', text: 'Volume set.' });
    }
  });

  it('refuses malformed JSON without throwing', () => {
    expect(parseServerEvent('{"type": "response.done", ')).toEqual({ ok: false, kind: 'invalid', reason: 'not valid JSON' });
    expect(parseServerEvent('[1,2]')).toMatchObject({ ok: false, kind: 'invalid', reason: 'not a JSON object' });
    expect(parseServerEvent('null')).toMatchObject({ ok: false, kind: 'invalid' });
    expect(parseServerEvent(Buffer.from('\u0000\u0001'))).toMatchObject({ ok: false, kind: 'invalid' });
  });

  it('tells unknown types apart from invalid ones', () => {
    expect(parseServerEvent({ type: 'rate_limits.updated' })).toMatchObject({ ok: false, kind: 'unknown', type: 'rate_limits.updated' });
    expect(parseServerEvent({ nothing: true })).toMatchObject({ ok: false, kind: 'invalid', reason: 'missing "type"' });
  });

  it('names the missing field of a known type', () => {
    const r = parseServerEvent({ type: 'response.output_item.done', item: { type: 'function_call', id: 'i', name: 'quiet_device', arguments: '{}' } });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.kind).toBe('invalid');
      expect(r.reason).toContain('item');
    }
    const t = parseServerEvent({ type: 'conversation.item.input_audio_transcription.completed' });
    expect(t).toMatchObject({ ok: false, kind: 'invalid' });
    if (!t.ok) expect(t.reason).toContain('transcript');
  });

  it('keeps a message output item (not a function call) valid', () => {
    const r = parseServerEvent({ type: 'response.output_item.done', item: { type: 'message', id: 'm1', content: [] } });
    expect(r.ok).toBe(true);
  });
});

describe('parseClientEvent', () => {
  it('accepts function_call_output and response.create', () => {
    expect(
      parseClientEvent({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: 'c1', output: '{"success":true}' } }).ok,
    ).toBe(true);
    expect(parseClientEvent('{"type":"response.create"}').ok).toBe(true);
  });

  it('refuses an item without call_id and an unknown type', () => {
    expect(parseClientEvent({ type: 'conversation.item.create', item: { type: 'function_call_output', output: '{}' } })).toMatchObject({ ok: false, kind: 'invalid' });
    expect(parseClientEvent({ type: 'input_audio_buffer.append', audio: '' })).toMatchObject({ ok: false, kind: 'unknown' });
  });
});

// Issue 17 fault suite, device side: a peer sends 10,000 random and malformed data-channel events (garbage bytes,
// JSON that is not an object, events without or with unknown types, known events with fields of the wrong type,
// endless transcript deltas under ever new ids, function calls with bad arguments). The agent's call survives them
// all, answers every device-function call with an error output and no mixer change, keeps its bookkeeping bounded,
// and then carries out a valid set_device_volume on the real mixer. A real Call (WebrtcTransport) against the
// in-process TEST PEER.
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Call, FunctionRecord } from '../../src/agent/call.js';
import { ensureIdentity } from '../../src/agent/identity.js';
import { AmixerMixer } from '../../src/agent/mixer/amixerMixer.js';
import { waitUntil } from '../support/audioCapture.js';
import { realCall } from '../support/realCall.js';
import { prng } from '../support/restFuzz.js';
import { TestAssistantPeer } from '../support/testAssistantPeer.js';
import { VIRTUAL } from '../support/virtualAudio.js';

const KEY = 'ws-dc-fuzz-key-0123456789';
let peer: TestAssistantPeer | undefined;
let call: Call | undefined;
afterAll(async () => {
  await call?.close();
  await peer?.stop();
});

/** One malformed or hostile event, as the raw text the peer sends. */
function fuzzEvent(rnd: () => number, i: number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
  const junk = () => String.fromCharCode(...Array.from({ length: 1 + Math.floor(rnd() * 200) }, () => Math.floor(rnd() * 0xd7ff)));
  const weird = () => pick([null, 1, -1e308, true, 'x', [], {}, [1, [2, [3]]], { a: { b: { c: {} } } }, 'y'.repeat(5000), NaN, '\u0000']);
  switch (i % 12) {
    case 0:
      return junk();
    case 1:
      return JSON.stringify(weird());
    case 2:
      return JSON.stringify({ no_type: weird() });
    case 3:
      return JSON.stringify({ type: weird() });
    case 4:
      return JSON.stringify({ type: `unknown.${i}`, payload: weird() });
    case 5:
      return JSON.stringify({ type: 'response.output_item.done', item: weird() });
    case 6:
      // a device function with arguments that can never be valid: an error output, no mixer change
      return JSON.stringify({
        type: 'response.output_item.done',
        item: { type: 'function_call', id: `item_${i}`, call_id: `fz_${i}`, name: 'set_device_volume', arguments: pick(['', '{', 'null', '[]', '{"volume_level":"loud"}', '{"volume_level":-5}', '{"volume_level":1e9}', '{"volume_level":null}', '{"volume_level":[50]}', '{"volume_level":"50%"}']) },
      });
    case 7:
      return JSON.stringify({ type: 'response.output_item.done', item: { type: 'function_call', name: weird(), call_id: weird(), arguments: weird() } });
    case 8:
      return JSON.stringify({ type: 'response.output_audio_transcript.delta', item_id: `i_${i}`, delta: pick(['a', 'z'.repeat(3000), weird()]) });
    case 9:
      return JSON.stringify({ type: 'conversation.item.input_audio_transcription.completed', transcript: weird() });
    case 10:
      return JSON.stringify({ type: 'error', error: weird() });
    default:
      return '['.repeat(5000) + ']'.repeat(5000);
  }
}

describe('data-channel fuzz (10,000 malformed events from the peer)', () => {
  it('the call survives, every bad function call is refused without touching the mixer, then a valid one works', async () => {
    const tmp = await mkdtemp(path.join(os.tmpdir(), 'dc-fuzz-'));
    const { identity } = await ensureIdentity(path.join(tmp, 'state'));
    peer = new TestAssistantPeer({ workspaceKey: KEY });
    await peer.start();
    const mixer = new AmixerMixer({ card: 'default', control: VIRTUAL.mixerControl });
    await mixer.setVolume(50);
    const functions: FunctionRecord[] = [];
    const outputs: Array<{ call_id: string; output: string }> = [];
    peer.onEvent = (raw) => {
      const e = JSON.parse(raw) as { type: string; item?: { type: string; call_id: string; output: string } };
      if (e.type === 'conversation.item.create' && e.item?.type === 'function_call_output') outputs.push({ call_id: e.item.call_id, output: e.item.output });
    };
    call = realCall({
      url: peer.url,
      workspaceKey: KEY,
      clientId: identity.clientId,
      clientSecret: identity.clientSecret,
      mixer,
      hooks: { onFunction: (r) => functions.push(r) },
    });
    await call.connect();
    let ended = false;
    let endReason = '';
    void call.ended.then((r) => {
      ended = true;
      endReason = r.message;
    });

    const rnd = prng(4242);
    let sent = 0;
    let badCalls = 0;
    let firstFail = -1;
    for (let i = 0; i < 10_000; i++) {
      if (!peer.sendEvent(fuzzEvent(rnd, i))) {
        if (firstFail < 0) firstFail = i;
        continue;
      }
      sent++;
      if (i % 12 === 6) badCalls++;
      // paced (about 2,000 events a second): the test is about what the events say, not about flooding SCTP
      if (i % 20 === 19) await new Promise((r) => setTimeout(r, 10));
    }
    expect({ sent, firstFail, ended, endReason }).toEqual({ sent: 10_000, firstFail: -1, ended: false, endReason: '' });
    await waitUntil(() => outputs.length >= badCalls, 30_000, 'an output for every bad device-function call').catch((err) => {
      throw new Error(`${(err as Error).message}: ${outputs.length} of ${badCalls}, ${functions.length} function records`);
    });
    expect(ended).toBe(false);
    for (const o of outputs) expect(JSON.parse(o.output).success).toBe(false);
    expect((await mixer.get()).volumePercent).toBe(50);

    // still a working call
    peer.sendEvent({ type: 'response.output_item.done', item: { type: 'function_call', id: 'item_ok', call_id: 'ok', name: 'set_device_volume', arguments: '{"volume_level":37}' } });
    await waitUntil(() => outputs.some((o) => o.call_id === 'ok'), 10_000, 'the valid call\'s output');
    expect(JSON.parse(outputs.find((o) => o.call_id === 'ok')!.output).success).toBe(true);
    expect((await mixer.get()).volumePercent).toBe(37);
    expect(ended).toBe(false);
  }, 120_000);
});

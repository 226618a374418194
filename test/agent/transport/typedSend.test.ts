// Outgoing events are typed by the contract (src/protocol/events.ts ClientEvent): an event the spec does not
// define, or a malformed one, does not compile. `npm test` typechecks first, so the @ts-expect-error lines below
// fail the run if the type ever widens back to `object`.
import { describe, expect, it } from 'vitest';
import type { TransportLayer } from '../../../src/agent/transport/transportLayer.js';
import { parseClientEvent } from '../../../src/protocol/events.js';
import { ScriptedTransport } from '../../support/scriptedTransport.js';

function sendsOnlyContractEvents(t: TransportLayer): void {
  t.send({ type: 'response.create' });
  t.send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: 'c1', output: '{}' } });
  // @ts-expect-error an event type the spec does not define
  t.send({ type: 'response.bogus' });
  // @ts-expect-error a function_call_output without its call_id
  t.send({ type: 'conversation.item.create', item: { type: 'function_call_output', output: '{}' } });
}

describe('TransportLayer.send', () => {
  it('takes the contract client events, and what it sends parses as one', () => {
    const t = new ScriptedTransport();
    t.closed = false;
    sendsOnlyContractEvents(t);
    expect(t.sent.map((e) => e.type)).toEqual(['response.create', 'conversation.item.create', 'response.bogus', 'conversation.item.create']);
    // the two well-typed ones are valid on the wire; the two the compiler refuses are refused by the parser too
    expect(t.sent.map((e) => parseClientEvent(e).ok)).toEqual([true, true, false, false]);
  });
});

// Which of the session's TURN URLs a call relays through (werift takes the first it sees). The e2e of it, against
// coturn behind a firewall, is in test/agent/turnRelay.e2e.test.ts.
import { describe, expect, it } from 'vitest';
import type { IceServer } from '../../../src/protocol/session.js';
import { TurnRotation } from '../../../src/agent/transport/turnRotation.js';

const SERVERS: IceServer[] = [
  { urls: ['stun:stun.example.org:3478'], username: '', credential: '' },
  { urls: ['turn:turn.example.org:3478?transport=udp', 'turn:turn.example.org:3478?transport=tcp'], username: 'u1', credential: 'c1' },
  { urls: ['turns:relay.example.org:443?transport=tcp'], username: 'u2', credential: 'c2' },
];
const firstTurn = (servers: IceServer[]) => {
  for (const s of servers) for (const url of s.urls) if (/^turns?:/.test(url)) return { url, username: s.username, credential: s.credential };
  return undefined;
};

describe('TurnRotation', () => {
  it('keeps the service\'s order until an attempt fails, then tries each TURN URL in turn, with its own credentials', () => {
    const r = new TurnRotation();
    expect(firstTurn(r.order(SERVERS))).toEqual({ url: 'turn:turn.example.org:3478?transport=udp', username: 'u1', credential: 'c1' });
    expect(r.failed(SERVERS)).toBe('turn:turn.example.org:3478?transport=tcp');
    expect(firstTurn(r.order(SERVERS))).toEqual({ url: 'turn:turn.example.org:3478?transport=tcp', username: 'u1', credential: 'c1' });
    expect(r.failed(SERVERS)).toBe('turns:relay.example.org:443?transport=tcp');
    expect(firstTurn(r.order(SERVERS))).toEqual({ url: 'turns:relay.example.org:443?transport=tcp', username: 'u2', credential: 'c2' });
    expect(r.current(SERVERS)).toBe('turns:relay.example.org:443?transport=tcp');
    // a call that comes up changes nothing: the URL that worked stays first for the next call
    expect(firstTurn(r.order(SERVERS))?.url).toBe('turns:relay.example.org:443?transport=tcp');
    expect(r.failed(SERVERS)).toBe('turn:turn.example.org:3478?transport=udp'); // and round again
  });

  it('STUN keeps its place, and every URL of the session is still there', () => {
    const r = new TurnRotation();
    r.failed(SERVERS);
    const ordered = r.order(SERVERS);
    expect(ordered.flatMap((s) => s.urls).find((u) => u.startsWith('stun:'))).toBe('stun:stun.example.org:3478');
    for (const s of SERVERS) expect(ordered).toContainEqual(s);
  });

  it('with one TURN URL or none, the servers are the session\'s, untouched, and a failure names no next URL', () => {
    const r = new TurnRotation();
    const one = SERVERS.slice(0, 2).map((s, i) => (i === 1 ? { ...s, urls: [s.urls[0]] } : s));
    expect(r.order(one)).toBe(one);
    expect(r.failed(one)).toBeUndefined();
    expect(r.order([])).toEqual([]);
    expect(r.failed([])).toBeUndefined();
  });
});

// The README's tables describe code: they must list exactly what the code does.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLIENT_EVENT_ERRORS, REALTIME_ERRORS } from '../src/protocol/realtimeErrors.js';
import { ENV_OVERRIDES } from '../src/agent/settings.js';

const readme = readFileSync(path.resolve(import.meta.dirname, '../README.md'), 'utf8');

describe('README.md', () => {
  it('lists every realtime error code with its status and type', () => {
    const rows = [...readme.matchAll(/^\| ([a-z_]+) \| (\d{3}) \| ([a-z_]+) \|/gm)].map((m) => [m[1], { status: Number(m[2]), type: m[3] }]);
    const expected = Object.entries(REALTIME_ERRORS).map(([k, v]) => [k, { status: v.status, type: v.type }]);
    expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(expected));
  });

  it('names every code of the error events answered to bad client messages', () => {
    const named = /events for bad client messages \(codes ([^)]*)\)/.exec(readme)?.[1] ?? '';
    expect([...named.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]).sort()).toEqual(Object.keys(CLIENT_EVENT_ERRORS).sort());
  });

  it('lists every agent environment override with the setting it sets', () => {
    const rows = [...readme.matchAll(/^\| `(SPEAKER_AGENT_[A-Z_]+)` \| `([^`]+)` \|/gm)].map((m) => [m[1], m[2]]);
    expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(ENV_OVERRIDES.map((o) => [o.env, o.key])));
  });

  it('starts with the two commands of a fresh machine, and CI runs the second', () => {
    const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    expect(firstBlock).toContain('bash scripts/setup.sh && npm start');
    expect(firstBlock).toContain('bash scripts/setup.sh --dev && npm test');
    const ci = readFileSync(path.resolve(import.meta.dirname, '../.ci/run'), 'utf8');
    expect(ci).toContain('bash scripts/setup.sh --dev');
    expect(ci).toMatch(/^npm test/m);
  });
});

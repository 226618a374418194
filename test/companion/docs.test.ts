// The companion's documented error table and settings table must match the code they describe.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMPANION_ENV_OVERRIDES } from '../../src/companion/settings.js';
import { REST_ERRORS } from '../../src/protocol/restErrors.js';

const doc = readFileSync(path.resolve(import.meta.dirname, '../../src/companion/README.md'), 'utf8');

describe('src/companion/README.md', () => {
  it('lists every REST error code with the status the server answers', () => {
    const rows = [...doc.matchAll(/^\| ([A-Z_]+) \| (\d{3})/gm)].map((m) => [m[1], Number(m[2])]);
    expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(Object.entries(REST_ERRORS).map(([k, v]) => [k, v.status])));
  });

  it('documents only environment variables the settings read, with their keys', () => {
    const rows = [...doc.matchAll(/^\| `(SPEAKER_AGENT_[A-Z_]+)` \| `([\w.]+)` \|/gm)];
    expect(rows.length).toBeGreaterThanOrEqual(10);
    for (const [, env, key] of rows) expect(COMPANION_ENV_OVERRIDES.find((o) => o.env === env)?.key).toBe(key);
  });
});

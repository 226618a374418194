// The offline brain against a real SQLite workspace: intents, arguments, stories, and confirmations built from
// the device's function output.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../../src/companion/db/database.js';
import { upsertStory } from '../../../src/companion/db/stories.js';
import { createWorkspace } from '../../../src/companion/db/workspaces.js';
import { ASSISTANT_TOOLS, STOP_AUDIO_TOOL } from '../../../src/companion/realtime/brain.js';
import { databaseStoryCatalog } from '../../../src/companion/realtime/plugin.js';
import { CLOCK_NOT_SET_TEXT, FALLBACK_TEXT, HELP_TEXT, NO_DEVICE_FUNCTION_TEXT, RuleBrain } from '../../../src/companion/realtime/ruleBrain.js';
import { systemWallClock } from '../../../src/companion/realtime/systemClock.js';

let dir: string;
let db: Db;
let ws: string;
let empty: string;
let brain: RuleBrain;

const story = (name: string, transcript: string, slug: string | null, sort = 0) =>
  upsertStory(db, { workspace_id: ws, slug, name, transcript, excerpt: null, age_group: null, illustration_url: null, illustration_alt: null, sort_order: sort, default_voice_profile_id: null });

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rulebrain-'));
  db = openDatabase(dir);
  ws = createWorkspace(db, 'home', 'a'.repeat(64)).id;
  empty = createWorkspace(db, 'empty', 'b'.repeat(64)).id;
  story('The Brave Little Kite', 'A kite flew high.', 'kite', 0);
  story('Moon Soup', 'The moon made soup.', 'moon-soup', 1);
  story('Draft Story', 'Not published.', null, 2);
  // a machine without systemd-timesyncd: the clock is taken at its word
  brain = new RuleBrain(databaseStoryCatalog(db), systemWallClock({ now: () => new Date(2026, 10, 22, 15, 5), timesyncDir: path.join(dir, 'no-timesyncd') }));
});
afterAll(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const ask = (transcript: string, workspaceId = ws) => brain.respond({ transcript, history: [], tools: ASSISTANT_TOOLS, workspaceId });

describe('RuleBrain.respond', () => {
  it.each([
    ['set the volume to forty percent', { name: 'set_device_volume', arguments: { volume_level: 40 } }],
    ['set volume to seventy five', { name: 'set_device_volume', arguments: { volume_level: 75 } }],
    ['volume one hundred percent', { name: 'set_device_volume', arguments: { volume_level: 100 } }],
    ['set the volume to zero percent', { name: 'set_device_volume', arguments: { volume_level: 0 } }],
    ['volume up', { name: 'adjust_device_volume', arguments: { action: 'increase' } }],
    ['turn it up', { name: 'adjust_device_volume', arguments: { action: 'increase' } }],
    ['louder', { name: 'adjust_device_volume', arguments: { action: 'increase' } }],
    ['volume down', { name: 'adjust_device_volume', arguments: { action: 'decrease' } }],
    ['quieter', { name: 'adjust_device_volume', arguments: { action: 'decrease' } }],
    ['be quiet', { name: 'quiet_device', arguments: {} }],
    ['mute', { name: 'quiet_device', arguments: {} }],
    ['stop', { name: 'stop_audio', arguments: {} }],
    ['stop talking', { name: 'stop_audio', arguments: {} }],
  ])('"%s" -> function call', async (t, fc) => {
    expect(await ask(t)).toEqual({ functionCall: fc });
  });

  it('regression: a call that offers no device functions (a stock GA client) got volume function calls; now a spoken answer', async () => {
    const offered = [STOP_AUDIO_TOOL];
    for (const t of ['set the volume to forty percent', 'volume up', 'be quiet']) {
      expect(await brain.respond({ transcript: t, history: [], tools: offered, workspaceId: ws })).toEqual({ say: NO_DEVICE_FUNCTION_TEXT });
    }
    expect(await brain.respond({ transcript: 'stop', history: [], tools: offered, workspaceId: ws })).toEqual({ functionCall: { name: 'stop_audio', arguments: {} } });
  });

  it('refuses volume levels it cannot set, honestly', async () => {
    expect((await ask('set the volume to two hundred percent')).say).toMatch(/zero to one hundred/);
    expect((await ask('set the volume to loud percent')).say).toMatch(/didn't catch the volume/);
  });
  it('lists only the slugged stories of the caller\'s workspace', async () => {
    expect((await ask('list the stories')).say).toBe('I know 2 stories: The Brave Little Kite and Moon Soup.');
    expect((await ask('what stories do you have', empty)).say).toBe('There are no stories yet.');
  });
  it('reads the named story, or the first one', async () => {
    expect((await ask('read me the story moon soup')).say).toBe('Moon Soup. The moon made soup.');
    expect((await ask('read me a story')).say).toBe('The Brave Little Kite. A kite flew high.');
    expect((await ask('read me a story', empty)).say).toMatch(/no stories/);
  });
  it('tells the time, greets, helps, and answers anything else with a short honest answer', async () => {
    expect((await ask('what time is it')).say).toBe('It is 3 oh 5 in the afternoon.');
    expect((await ask('hello')).say).toBe('Hello! How can I help?');
    expect((await ask('help')).say).toBe(HELP_TEXT);
    expect((await ask('what can you do')).say).toBe(HELP_TEXT);
    expect((await ask('what is the capital of peru')).say).toBe(FALLBACK_TEXT);
    expect((await ask('unmute')).say).toMatch(/tell me a volume/);
  });
  it('regression: does not read out a clock that has not been set from the network yet (a board without a real-time clock, before NTP); tells the time once it has', async () => {
    // systemd-timesyncd's runtime directory, without its flag yet, and the kernel's 16 s "no NTP client set me"
    const timesyncDir = path.join(dir, 'timesync');
    mkdirSync(timesyncDir);
    const booted = new RuleBrain(databaseStoryCatalog(db), systemWallClock({ now: () => new Date(1970, 0, 1, 0, 0, 12), timesyncDir, kernelMaxError: async () => 16_000_000 }));
    const askBooted = (transcript: string) => booted.respond({ transcript, history: [], tools: ASSISTANT_TOOLS, workspaceId: ws });
    expect((await askBooted('what time is it')).say).toBe(CLOCK_NOT_SET_TEXT); // before: "It is 12 o'clock in the morning."
    expect((await askBooted('volume up')).functionCall?.name).toBe('adjust_device_volume'); // nothing else waits for the clock
    writeFileSync(path.join(timesyncDir, 'synchronized'), ''); // timesyncd's first synchronisation
    expect((await askBooted('what time is it')).say).toBe("It is 12 o'clock in the morning.");
  });
});

describe('RuleBrain.afterFunction', () => {
  const after = (name: string, output: string) =>
    brain.afterFunction({ call: { name, arguments: {} }, output, history: [], workspaceId: ws });
  it('confirms from the device output', async () => {
    expect((await after('set_device_volume', JSON.stringify({ success: true, result: { volume_level: 40, muted: false, message: 'ok' } }))).say).toBe('The volume is now 40 percent.');
    expect((await after('quiet_device', JSON.stringify({ success: true, result: { volume_level: 0, muted: true, message: 'muted' } }))).say).toBe('The speaker is muted.');
  });
  it('reports the device error, or an unreadable answer', async () => {
    expect((await after('set_device_volume', JSON.stringify({ success: false, error: 'mixer busy' }))).say).toBe("Sorry, I couldn't change the volume: mixer busy.");
    expect((await after('set_device_volume', 'not json')).say).toMatch(/could not read/);
  });
});

// doctor's wake word check with the real engine and the real synthesiser: it passes with the defaults, is
// skipped when no wake word runs, and says what to do with a phrase the engine cannot know.
import { describe, expect, it } from 'vitest';
import { parseSettings } from '../../src/agent/settings.js';
import { checkWakeWord } from '../../src/cli/wakeCheck.js';

describe('doctor: wake word', () => {
  it('the default phrase loads and is heard from a synthetic voice', async () => {
    const r = await checkWakeWord(parseSettings({}));
    expect(r.status, r.detail).toBe('pass');
    expect(r.detail).toMatch(/"hey jarvis" heard from a synthetic voice/);
  }, 30_000);

  it('is skipped in modes without a wake word', async () => {
    expect(await checkWakeWord(parseSettings({ listening: { mode: 'manual' } }))).toMatchObject({ status: 'skip', detail: expect.stringMatching(/manual/) });
  });

  it('a phrase outside the dictionary fails as configuration, with the fix', async () => {
    const r = await checkWakeWord(parseSettings({ listening: { wakePhrase: 'hey zorblaxicon' } }));
    expect(r).toMatchObject({ status: 'fail', category: 'config' });
    expect(r.fix).toMatch(/listening\.wakePhrase/);
  });
});

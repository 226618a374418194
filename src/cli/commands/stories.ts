// `speaker-agent stories [list | read SLUG]`: the workspace's stories; `read` plays the narration.
import type { Command } from 'commander';
import { AgentError } from '../../agent/errors.js';
import { decodeWav } from '../../common/audio/wav.js';
import { serviceAccess } from '../cliContext.js';
import { audioBackend } from '../../agent/device.js';
import { emit, printJson, printLine, table } from '../output.js';
import { playClip } from '../player.js';

interface StoryCard {
  story_id: unknown;
  slug: string;
  name: string;
  excerpt?: string;
  age_group?: unknown;
}

export function registerStories(program: Command): void {
  const stories = program
    .command('stories')
    .description('list the workspace\'s stories, or read one aloud')
    .addHelpText('after', '\nExamples:\n  speaker-agent stories\n  speaker-agent stories read the-little-lighthouse\n  speaker-agent stories list --json');

  const list = async (o: { json?: boolean }) => {
    const { client } = await serviceAccess();
    const res = await client.requestApp('GET', '/v1/app/stories');
    const cards = Array.isArray(res.json) ? (res.json as StoryCard[]) : [];
    emit(o, { stories: cards }, (r) =>
      r.stories.length === 0 ? 'no stories in this workspace' : table(['slug', 'name', 'excerpt'], r.stories.map((c) => [c.slug, c.name, (c.excerpt ?? '').slice(0, 60)])),
    );
  };
  stories.command('list', { isDefault: true }).description('list story cards').option('--json', 'print JSON').action(list);

  stories
    .command('read')
    .description('narrate a story on the speaker (WAV from the service)')
    .argument('<slug>', 'the story\'s slug (see `speaker-agent stories`)')
    .option('--voice <voice_id>', 'narrating voice (default: the story\'s voice, else the workspace\'s first)')
    .option('--no-play', 'fetch the narration but do not play it')
    .option('--json', 'print JSON (story and narration length)')
    .action(async (slug: string, o: { voice?: string; play: boolean; json?: boolean }) => {
      const access = await serviceAccess();
      const path = `/v1/app/stories/${encodeURIComponent(slug)}`;
      const story = (await access.client.requestApp('GET', path)).json as { name: string; transcript: string };
      if (!o.json) printLine(`${story.name}\n`);
      // the whole story is synthesised before the first byte, then a large WAV: no 10 s deadline on all of it
      const res = await access.client.requestApp('POST', `${path}/read`, o.voice ? { voice_id: o.voice } : {}, { longAnswer: true });
      if (!res.contentType.includes('wav')) throw new AgentError('protocol', `the narration is ${res.contentType || 'untyped'}, expected audio/wav`);
      const wav = decodeWav(res.body);
      const durationMs = Math.round((wav.pcm.length / wav.channels / wav.sampleRate) * 1000);
      if (o.play) {
        if (!o.json) printLine(story.transcript);
        await playClip(await audioBackend(), access.loaded.settings.audio.playbackDevice, wav.pcm, wav.sampleRate);
      }
      if (o.json) printJson({ story, narration: { bytes: res.body.length, sampleRate: wav.sampleRate, durationMs, played: o.play } });
      else printLine(`\n(${(durationMs / 1000).toFixed(1)} s narration${o.play ? '' : ', not played'})`);
    });
}

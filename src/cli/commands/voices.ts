// `speaker-agent voices`: the voices this device may use (GET /v1/app/voices).
import type { Command } from 'commander';
import { serviceAccess } from '../cliContext.js';
import { emit, table } from '../output.js';

export interface VoiceItem {
  voice_id: string;
  name: string;
  category: string;
  preview_url?: string;
}

export async function listVoices(): Promise<VoiceItem[]> {
  const { client } = await serviceAccess();
  const res = await client.requestApp('GET', '/v1/app/voices');
  const voices = (res.json as { voices?: VoiceItem[] } | undefined)?.voices;
  return Array.isArray(voices) ? voices : [];
}

export function registerVoices(program: Command): void {
  program
    .command('voices')
    .description('list the voices of the workspace and this device\'s clones')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExamples:\n  speaker-agent voices\n  speaker-agent say --voice "$(speaker-agent voices --json | jq -r \'.voices[0].voice_id\')" "Hello"')
    .action(async (o: { json?: boolean }) => {
      const voices = await listVoices();
      emit(o, { voices }, (r) =>
        r.voices.length === 0 ? 'no voices in this workspace' : table(['voice id', 'name', 'category'], r.voices.map((v) => [v.voice_id, v.name, v.category])),
      );
    });
}

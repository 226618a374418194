// The offline pair as a household runs it for weeks: the companion (`speaker-agent companion serve`, its own
// process: speech recognition, the rule brain, espeak-ng's voice) and one agent in mode wake, in ONE call for
// BENCH_SOAK_MIN minutes (default 60). Every 2 minutes the scripted user (flite) says the wake word and then a
// command ("set the volume to forty percent", or fifty); the companion recognises it, calls set_device_volume on
// the device and answers aloud. Sampled every 30 s, both processes: anonymous memory growth after BENCH_SOAK_WARM_MIN
// (default 20), descriptors and threads (bench/call-soak.bench.ts has the agent against a scripted peer, both Nodes).
// Also the companion's kept reply synthesis process (espeakWorker, its realtime lane), which lives beside the agent
// on a speaker as long as the companion does: its memory keeper is meant to hold it flat.
// Recognition is pocketsphinx on synthetic speech, so a command may be misheard: the row counts the commands
// carried out and passes at 80 %; the soak's point is the memory.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startCliCompanion, type CliCompanion } from '../test/support/cli.js';
import { buildAgent, privateNode, spawnAgent, startVirtualAudio, stopAgent, stopVirtualAudio, type AgentProc } from './agentProcess.js';
import { callEndings, growthRows, sampleOf, type Sample } from './call-soak.bench.js';
import type { BenchRow } from './table.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ROUND_MS = Number(process.env.BENCH_SOAK_ROUND_S ?? 120) * 1000;
const SAMPLE_MS = 30_000;

export async function run(): Promise<BenchRow[]> {
  const named = process.argv.slice(2).some((o) => 'companion-soak.bench.ts'.includes(o));
  if (!named && !process.env.BENCH_SOAK_MIN) return [{ issue: '-', metric: 'companion soak', value: NaN, unit: '', note: 'an hour long: `npm run bench companion-soak` (BENCH_SOAK_MIN)' }];
  const minutes = Number(process.env.BENCH_SOAK_MIN ?? 60);
  const warmMin = Number(process.env.BENCH_SOAK_WARM_MIN ?? 20);
  startVirtualAudio();
  const agentMain = await buildAgent();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-soak-'));
  const say = (text: string, file: string) => (execFileSync('flite', ['-voice', 'slt', '-t', text, '-o', path.join(dir, file)]), path.join(dir, file));
  const wake = say('hey jarvis', 'wake.wav');
  const commands = [say('set the volume to forty percent', 'forty.wav'), say('set the volume to fifty percent', 'fifty.wav')];
  const companionLog = path.join(dir, 'companion.log');
  let companion: CliCompanion | undefined;
  let agent: AgentProc | undefined;
  const samples: { agent: Sample[]; companion: Sample[]; reply: Sample[] } = { agent: [], companion: [], reply: [] };
  const replyPids = new Set<number>();
  let rounds = 0;
  let heard = 0;
  let done = 0;
  let calls = 0;
  try {
    // the bundle's CLI, as `npm run build` makes it (buildAgent bundles it beside the agent); its log at debug
    // level, for its memory keeper's lines
    companion = await startCliCompanion({ ...process.env, SPEAKER_AGENT_LOG_LEVEL: 'debug' }, path.join(path.dirname(agentMain), 'speaker-agent.js'), companionLog);
    const a = (agent = spawnAgent(agentMain, companion.url, mkdtempSync(path.join(os.tmpdir(), 'bench-state-')), { listening: { mode: 'wake', silenceMs: 1_000 } }, privateNode(), { SPEAKER_AGENT_WORKSPACE_KEY: companion.workspaceKey }));
    await a.next(/^call connected$/, 60_000);
    calls = 1;
    if (!a.lines.some((l) => l.includes('wake word engine ready'))) await a.next(/^wake word engine ready$/, 60_000);
    const t0 = performance.now();
    const pids = { agent: a.child.pid!, companion: companion.child.pid! };
    const sampling = setInterval(() => {
      for (const who of ['agent', 'companion'] as const) {
        const sample = sampleOf(pids[who], t0);
        if (sample) samples[who].push(sample);
      }
      const reply = replyWorker(pids.companion);
      const sample = reply === undefined ? undefined : sampleOf(reply, t0);
      if (sample) (replyPids.add(reply!), samples.reply.push(sample));
    }, SAMPLE_MS);
    try {
      while (performance.now() - t0 < minutes * 60_000) {
        const roundStart = performance.now();
        rounds++;
        const wakeHeard = a.next(/^wake word heard$/, 10_000).then(() => true, () => false);
        execFileSync('paplay', ['-d', 'mic_in', wake], { env: process.env });
        if (await wakeHeard) {
          heard++;
          const fn = a.next(/^function set_device_volume/, 30_000).then(() => true, () => false);
          await sleep(300); // a breath after the wake word
          execFileSync('paplay', ['-d', 'mic_in', commands[rounds % 2]], { env: process.env });
          if (await fn) done++;
        }
        await sleep(Math.max(0, ROUND_MS - (performance.now() - roundStart)));
      }
    } finally {
      clearInterval(sampling);
    }
    calls += a.lines.filter((l) => l.includes('"call connected"')).length - 1;
  } finally {
    if (agent) await stopAgent(agent);
    companion?.close();
    stopVirtualAudio();
  }
  const endings = callEndings(agent?.lines ?? []);
  return [
    { issue: '-', metric: 'companion soak: rounds heard / commands carried out', value: done, unit: `of ${rounds}`, target: '>= 80 %, one call', pass: done >= rounds * 0.8 && calls === 1, note: `wake word heard ${heard} of ${rounds}; calls ${calls}${endings.length ? ` (${endings.join('; ')})` : ''}` },
    ...growthRows(`companion soak, agent (wake), one call`, samples.agent, warmMin, minutes),
    ...growthRows(`companion soak, companion serve`, samples.companion, warmMin, minutes),
    ...growthRows(`companion soak, its reply synthesis process${replyPids.size > 1 ? ` (${replyPids.size} processes: it was replaced)` : ''}`, samples.reply, warmMin, minutes),
    keeperRow(companionLog, samples.companion, warmMin),
  ];
}

/** The companion's kept reply synthesis process: its child running espeakWorker with the realtime lane's argument
 *  (60 ms buffers; a bulk worker gets 500). Looked up at every sample, since a crashed one is replaced. */
function replyWorker(companionPid: number): number | undefined {
  const found = spawnSync('pgrep', ['-P', String(companionPid), '-f', 'espeakWorker[^ ]* 60( |$)'], { encoding: 'utf8' });
  const pids = found.stdout.split('\n').filter(Boolean).map(Number);
  return pids.length === 1 ? pids[0] : undefined;
}

/** The companion's memory keeper (src/cli/commands/companion.ts): it collects and trims once resident memory has
 *  grown 8 MB since the last time, so between two trims the companion's memory rises by design; the row says how
 *  often that came and where the anonymous memory stood after the warm-up (lowest, highest, last). */
function keeperRow(logFile: string, samples: Sample[], warmMin: number): BenchRow {
  const collected = readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"memory keeper: collected"'));
  const released = collected.filter((l) => l.includes('"released":true')).length;
  const steady = samples.filter((s) => s.min >= warmMin).map((s) => s.anon);
  const band = steady.length ? `anonymous memory after the warm-up ${Math.min(...steady).toFixed(1)}-${Math.max(...steady).toFixed(1)} MB, last ${steady.at(-1)!.toFixed(1)}` : 'no samples after the warm-up';
  return { issue: '-', metric: "companion soak, companion serve: its memory keeper's collections (of them, trims that returned memory)", value: collected.length, unit: `(${released})`, note: band };
}

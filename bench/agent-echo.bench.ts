// Issue #15 benchmark: echo cancellation on the virtual card's echo path (test/support/echoRoom.ts: 87 ms,
// -6 dB, a synthetic room impulse response, noise at -70 dBFS), measured on what the agent SENDS (the test peer's
// decoded audio). Side by side in one run, each with a fresh agent process and call:
//   (a) audio.duplex=half  - today's default gate
//   (b) audio.duplex=full  - no canceller
//   (c) PulseAudio module-echo-cancel, aec_method=webrtc - the anchor (the agent's ALSA "default" device goes to
//       the canceller's sink and source through PULSE_SINK / PULSE_SOURCE, which the ALSA pulse plugin's libpulse
//       honours); gain control off, so the figures measure cancellation, not level changes
//   (d) the same with aec_method=speex (its agc off; its noise and residual echo suppression on)
//   (e) the agent's own canceller, audio.duplex=auto - "not available" until the settings accept it
// The far end: flite narration streamed by the peer. Echo only for 12 s, then 6 near-end tone bursts (1 kHz,
// 1 s on / 1 s off) 10 dB below the echo. Figures and their definitions: test/support/echoMetrics.ts.
// ECHO_BENCH_MODES=half,full,... runs a subset.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseSettings } from '../src/agent/settings.js';
import { EchoRoom } from '../test/support/echoRoom.js';
import { NARRATION, runEchoScenario, type ScenarioResult } from '../test/support/echoScenario.js';
import { speechClip } from '../test/support/speechWav.js';
import { TestAssistantPeerProcess } from '../test/support/testAssistantPeer.js';
import { pactl } from '../test/support/virtualAudio.js';
import { BENCH_KEY as KEY, buildAgent, spawnAgent, startVirtualAudio, stopAgent, stopVirtualAudio } from './agentProcess.js';
import type { BenchRow } from './table.js';


type Mode = 'half' | 'full' | 'ec-webrtc' | 'ec-speex' | 'auto';
const LABEL: Record<Mode, string> = {
  half: '(a) duplex=half (gate)',
  full: '(b) duplex=full (no canceller)',
  'ec-webrtc': '(c) module-echo-cancel webrtc',
  'ec-speex': '(d) module-echo-cancel speex',
  auto: '(e) duplex=auto (agent canceller)',
};

/** Whether this build's settings accept audio.duplex 'auto' (the agent's own canceller). */
export function agentCancellerAvailable(): boolean {
  try {
    parseSettings({ audio: { duplex: 'auto' } });
    return true;
  } catch {
    return false;
  }
}

async function loadEchoCancel(method: 'webrtc' | 'speex'): Promise<string> {
  const args = method === 'webrtc' ? '"analog_gain_control=0 digital_gain_control=0"' : '"agc=0"';
  return (
    await pactl('load-module', 'module-echo-cancel', 'source_master=mic', 'sink_master=speaker', 'source_name=ec_mic', 'sink_name=ec_speaker', `aec_method=${method}`, `aec_args=${args}`)
  ).trim();
}

export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const modes = (process.env.ECHO_BENCH_MODES?.split(',') as Mode[] | undefined) ?? ['half', 'full', 'ec-webrtc', 'ec-speex', 'auto'];
  const ownCard = !process.env.PULSE_SERVER;
  if (ownCard) startVirtualAudio();
  const agentMain = await buildAgent();
  const peer = new TestAssistantPeerProcess({ workspaceKey: KEY, enrollmentFile: path.join(mkdtempSync(path.join(os.tmpdir(), 'bench-peer-')), 'enrolled.json'), ringSeconds: 60 });
  await peer.start();
  const room = new EchoRoom({ delayMs: 87, attenuationDb: 6, noiseDbfs: -70 });
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'bench-state-'));
  const farEnd = speechClip(NARRATION, { padBeforeMs: 0, padAfterMs: 0 }).pcm;
  try {
    const start = await room.start();
    process.stderr.write(`echo room: ${start.delayMs.toFixed(1)} ms (streams ${start.pipeMs.toFixed(1)} ms), far end ${(farEnd.length / 48_000).toFixed(1)} s\n`);
    for (const mode of modes) {
      if (mode === 'auto' && !agentCancellerAvailable()) {
        for (const metric of ['ERLE after convergence', 'user heard during double talk', 'convergence after the first far-end speech']) {
          rows.push({ issue: '#15', metric: `${LABEL[mode]}: ${metric}`, value: NaN, unit: '', note: 'not available: the settings do not accept audio.duplex "auto" (the canceller is not in this build)' });
        }
        continue;
      }
      let moduleId: string | undefined;
      const env: Record<string, string> = {};
      if (mode === 'ec-webrtc' || mode === 'ec-speex') {
        moduleId = await loadEchoCancel(mode === 'ec-webrtc' ? 'webrtc' : 'speex');
        env.PULSE_SINK = 'ec_speaker';
        env.PULSE_SOURCE = 'ec_mic';
        env.SPEAKER_AGENT_DUPLEX = 'full';
      } else env.SPEAKER_AGENT_DUPLEX = mode;
      const agent = spawnAgent(agentMain, peer.url, stateDir, undefined, process.execPath, env);
      let r: ScenarioResult;
      try {
        await agent.next(/^call connected$/, 20_000);
        await new Promise((res) => setTimeout(res, 2000)); // the devices' streams start
        if (moduleId) {
          // the agent's playback really goes to the canceller's sink (PULSE_SINK reached libpulse)
          const inputs = await pactl('list', 'short', 'sink-inputs');
          const sinks = await pactl('list', 'short', 'sinks');
          const ec = /^(\d+)\s+ec_speaker\s/m.exec(sinks)?.[1];
          if (!ec || !inputs.split('\n').some((l) => l.split('\t')[1] === ec)) throw new Error('the agent does not play into the echo canceller sink');
        }
        r = await runEchoScenario({
          room,
          peer,
          farEnd,
          echoOnlyS: 12,
          nearEnd: { kind: 'tone', freqHz: 1000, bursts: 6, onMs: 1000, offMs: 1000, relativeToEchoDb: -10 },
        });
      } catch (err) {
        rows.push({ issue: '#15', metric: `${LABEL[mode]}: failed`, value: NaN, unit: '', note: String((err as Error).message).slice(0, 160) });
        continue;
      } finally {
        await stopAgent(agent);
        if (moduleId) await pactl('unload-module', moduleId).catch(() => undefined);
      }
      const isAuto = mode === 'auto';
      const note = `path ${r.delayStartMs.toFixed(1)} -> ${r.delayEndMs.toFixed(1)} ms, room glitches ${r.roomCorrections}; ERLE per second ${r.echo.perSecondDb.join(' ')}`;
      process.stderr.write(`${LABEL[mode]}: ERLE ${r.echo.erleDb.toFixed(1)} dB, heard ${((r.doubleTalk?.heard ?? NaN) * 100).toFixed(0)} %, conv ${r.echo.convergenceS} s; ${note}\n`);
      rows.push({
        issue: '#15',
        metric: `${LABEL[mode]}: ERLE after convergence`,
        value: r.echo.erleDb,
        unit: 'dB',
        ...(isAuto ? { target: '>= 25 dB', pass: r.echo.erleDb >= 25 } : {}),
        note: `${r.echo.erleWindows} echo-only 200 ms windows; ${note}`,
      });
      const heard = (r.doubleTalk?.heard ?? NaN) * 100;
      rows.push({
        issue: '#15',
        metric: `${LABEL[mode]}: user heard during double talk`,
        value: heard,
        unit: '%',
        ...(isAuto ? { target: '>= 80 %', pass: heard >= 80 } : {}),
        note: `${r.doubleTalk?.windows ?? 0} double-talk windows; 1 kHz tone 10 dB below the echo`,
      });
      rows.push({
        issue: '#15',
        metric: `${LABEL[mode]}: convergence after the first far-end speech`,
        value: r.echo.convergenceS,
        unit: 's',
        ...(isAuto ? { target: '<= 2 s', pass: r.echo.convergenceS <= 2 } : {}),
        note: Number.isNaN(r.echo.convergenceS) ? 'never: no point after which every second of echo-only audio has ERLE >= 10 dB' : 'every later second of echo-only audio has ERLE >= 10 dB',
      });
    }
  } finally {
    await room.stop();
    await peer.kill();
    if (ownCard) stopVirtualAudio();
  }
  return rows;
}

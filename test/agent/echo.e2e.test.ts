// Echo cancellation end to end (issue #15), real parts only: the agent as a process (PortAudio on the virtual card,
// werift), the echo room (test/support/echoRoom.ts: 87 ms, -6 dB, a room impulse response, noise) between its
// speaker and its microphone, and what the agent SENDS measured at a real peer (Opus decoded):
//   (i)   echo only: ERLE >= 25 dB after convergence, and the user is still heard right after (double talk)
//   (ii)  double talk: near-end speech 10 dB below the echo reaches the peer: the companion's recogniser gets the
//         command right from what was sent, or >= 80 % of its 200 ms windows correlate >= 0.5 with the clean speech
//   (iii) the echo delay changes mid-call (87 -> 150 ms, as a reopened device would): re-tracked, ERLE >= 25 dB
//         after it and the user heard
//   (iv)  barge-in against the real companion: it narrates a story through the agent's speaker into the room,
//         hears nothing of its own echo (no user transcript), and stops when the user says "stop"
// Every test needs the user to be HEARD while the far end talks, so today's half-duplex gate fails them all
// (SPEAKER_AGENT_TEST_ECHO_DUPLEX=half runs them that way). They run once the settings accept audio.duplex
// 'auto' (the agent's own canceller), the mode under test by default.
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSettings } from '../../src/agent/settings.js';
import { resample } from '../../src/common/audio/resample.js';
import { PocketsphinxRecognizer } from '../../src/companion/speech/pocketsphinxRecognizer.js';
import { rmsDbfs } from '../../src/common/audio/signal.js';
import { recordSource, sleep } from '../support/audioCapture.js';
import { spawnAgentProcess } from '../support/childProcess.js';
import { startTestCompanion, type TestCompanion } from '../support/cli.js';
import { EchoRoom } from '../support/echoRoom.js';
import { NARRATION, runEchoScenario, type ScenarioResult } from '../support/echoScenario.js';
import { speechClip } from '../support/speechWav.js';
import { TestAssistantPeerProcess } from '../support/testAssistantPeer.js';
import { VIRTUAL } from '../support/virtualAudio.js';

const DUPLEX = process.env.SPEAKER_AGENT_TEST_ECHO_DUPLEX ?? 'auto';
function accepted(duplex: string): boolean {
  try {
    parseSettings({ audio: { duplex } });
    return true;
  } catch {
    return false;
  }
}
const runnable = Boolean(process.env.PULSE_SERVER) && accepted(DUPLEX);
// (ii) used to pass about 2 runs in 3 (4 of 8 in a row on 26 Nov): "forty" heard as "fourteen", the user in ~75 % of
// the windows. Replayed from the agent's own signals, two causes on the wire: speex's 5 ms-frame filter adapted on
// the user's voice (the echo left in its output rose 10-13 dB mid-command), and Opus's VOIP mode high-passed the
// voice (its phase shift cost 0.15 of correlation in voiced windows). The canceller now sends a second, 10 ms-frame
// filter once it cancels as well (speexEcho.ts), and Opus runs in AUDIO mode (opusCodec.ts): 21 of 22 runs passed
// (26 Nov, 19 in a row), heard in 83-100 % of the windows, mean correlation 0.75-0.81. The recogniser still heard
// "fourteen" in 6 of the 21 (the echo left under the user; the clean command through the same 16 kHz + Opus path
// is heard right), so the windows decide. Under load (two busy loops beside it, 27 Nov) it failed 3 runs in 12
// (58, 75, 0 % heard): the gate held 0.6-0.8 s after speaker underruns in the command, one of them caused by the
// agent's own training at convergence. With the underrun's silence placed where it played (the filter keeps
// 19-46 dB through it, so an underrun no longer closes the gate) and the training in slices: 11 of 11 under the
// same load, all recognised right, heard in 83-92 % (mean correlation 0.76-0.81); with the watch after underruns
// (echoCanceller.ts checkBreaks) 7 of 8. Left: the echo path moving 15-20 ms in a burst of underruns (0 % heard,
// 1 run in 12 before, 1 in 8 after). Measured since: silence the sound server played below PortAudio at its
// underruns (PortAudio's thread late), which moved the echo by as much; the reference now learns it from
// PortAudio's DAC times (dacClock.ts). Under heavier load (another helper's benchmarks too) 11 of 14 passed with
// that change and 11 of 14 without it, interleaved: the failures with it were the echo room's own underruns and
// a microphone stall. README, "The echo path".
// A failure's message carries the canceller's own account (its states and their reasons, the delays it found, the
// steady filter taking over, the speaker's underruns, with the agent's clock) and the echo room's glitches: CI's
// run of 3b689e8 failed (iii) with only "heard 0.65" to go on.
// (iv) used to fail about 1 run in 2: the canceller lifted the gate at 10 dB with the story's echo left at -40 to
// -45 dBFS and the companion's VAD took it for the user; it passes since the gate lifts at 20 dB (echoCanceller.ts).
// A local CI run on 27 Nov failed it once more (the echo heard as "ice", converged at 24.5 dB 3 s before the check);
// the agent's measured echo delay here is 128-200 ms, so before convergence the gate's 200 ms tail let the end of
// each word's echo through in the story's pauses: it now holds for the measured path (micStages.ts). The account
// lists the server's transcripts and the listening states, to tell a leak through the gate from one after it.
// CI's run of a0e7382 failed (i): 5-15 dB on the wire for ~3 s after convergence, nothing in the account. Traced
// here the same day: an echo that moved 2.25 ms at a speaker underrun (under the 3 ms that counts as a moved path)
// held speex's filter at 0-20 dB for 6 s, the user's tones gated ((i) failed, heard 0.25). Such moves now re-align
// the filter (echoCanceller.ts realign; "echo path re-aligned" in the account).
// CI's run of 85d2a77 failed (iv): the echo transcribed as "okay okay" 0.3 s after convergence at 24.4 dB, with
// the blocks left out of (iv)'s messages (they carry them now). In that account and in every run of (iv) here, the
// speaker underran as the first echo delay was found: the estimator's first FFTs ran cold in V8 (35-50 ms beside a
// busy loop); the canceller now warms them up (echoCanceller.ts warmUp): 5-13 ms, no underrun there in 3 of 3.
const KEY = 'ws-echo-key-0123456789';

interface AgentProcess {
  child: ChildProcess;
  connected: Promise<void>;
  /** what the user said, as the server's transcripts reached the agent (its "user: ..." log lines) */
  userSaid: string[];
  /** the canceller's own account (its state changes and delays, and the speaker's underruns, s since the agent
   *  started), for a failure's message:
   *  a run that fails on a loaded CI machine must say why without a rerun */
  aecLog: string[];
  /** the canceller's blocks (200 ms of playback each): "+t s ERLE", the delay estimate added where it moves */
  blocks: string[];
  /** performance.now() at the agent's start (aecLog's zero) */
  startedAt: number;
  stop(): Promise<void>;
}

/** The agent as it runs on a device (test/support/agentProcessMain.ts), in its own process. */
function startAgent(url: string, workspaceKey: string): AgentProcess {
  const child = spawnAgentProcess(url, workspaceKey, 'echo', {
    SPEAKER_AGENT_DUPLEX: DUPLEX,
    // the microphone on the wire all the time: these tests are about what the canceller lets through, not the
    // wake word (listening mode 'wake', the default, sends nothing before it)
    SPEAKER_AGENT_LISTENING_MODE: 'always',
    // debug: the canceller's every block (its ERLE and the delay estimate) for a failure's account
    SPEAKER_AGENT_LOG_LEVEL: 'debug',
  });
  const userSaid: string[] = [];
  const aecLog: string[] = [];
  const blocks: string[] = [];
  let lastEstimate: number | undefined;
  const t0 = performance.now();
  const connected = new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('the agent did not connect within 30 s')), 30_000);
    createInterface({ input: child.stdout! }).on('line', (l) => {
      const block = /"erleDb":(-?[\d.]+)(?:,"delayMs":([\d.]+))?.*"msg":"echo canceller: block"/.exec(l);
      if (block) {
        const est = block[2] === undefined ? undefined : Number(block[2]);
        const moved = est !== undefined && (lastEstimate === undefined || Math.abs(est - lastEstimate) >= 0.5);
        if (moved) lastEstimate = est;
        if (blocks.length === 0 || moved) blocks.push(`+${((performance.now() - t0) / 1000).toFixed(1)} s`);
        // ^ the loudest 20 ms of the canceller's output in the block, when over -60 dBFS (what a VAD may hear)
        const out = Number(/"outDbfs":(-?[\d.]+)/.exec(l)?.[1] ?? -Infinity);
        blocks.push(`${Math.round(Number(block[1]))}${moved ? `@${est}` : ''}${out > -60 ? `^${Math.round(out)}` : ''}`);
        return;
      }
      const said = /"msg":"user: (.*?)"/.exec(l);
      if (said) userSaid.push(said[1]);
      // the server's transcripts and the listening states (speech heard, stopped) on the same clock: a transcript
      // of the assistant's own echo then says whether it leaked before the canceller converged (the gate) or after
      const aec = /"msg":"echo canceller: (.*?)"/.exec(l) ?? /"msg":"(speaker underrun)/.exec(l) ?? /"msg":"(user: .*?)"/.exec(l) ?? /"msg":"(listening: .*?)"/.exec(l);
      if (aec) {
        const why = /"reason":"(.*?)"/.exec(l)?.[1] ?? /"delayMs":([\d.]+)/.exec(l)?.[1] ?? /"queueMs":(\d+)/.exec(l)?.[1];
        aecLog.push(`+${((performance.now() - t0) / 1000).toFixed(1)} s ${aec[1]}${why ? ` (${why})` : ''}`);
      }
      if (/"msg":"call connected"/.test(l)) {
        clearTimeout(t);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`the agent exited (${code}) before it connected`)));
  });
  connected.catch(() => undefined);
  return {
    child,
    connected,
    userSaid,
    aecLog,
    blocks,
    startedAt: t0,
    stop: async () => {
      // ECHO_ROOM_TRACE=1 (as for the room's own trace): every run's account, not only a failure's
      if (process.env.ECHO_ROOM_TRACE) process.stderr.write(`echo e2e: the agent's account: ${aecLog.join(', ')}\necho e2e: its blocks: ${blocks.join(' ')}\n`);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** What a failure's message adds: the room's glitches, where the near end played, and the canceller's log. */
function account(a: AgentProcess | undefined, r: ScenarioResult): string {
  const at = (i: number) => `+${((r.capturedFrom + (i / 48) - (a?.startedAt ?? 0)) / 1000).toFixed(1)} s`;
  return `; room corrections ${r.roomCorrections}; near end from ${at(r.nearStart)}; canceller: ${a?.aecLog.join(', ') || 'no log'}; its blocks (dB, @ the delay estimate where it moves, ^ the output's loudest 20 ms in dBFS when over -60): ${a?.blocks.join(' ') || 'none'}`;
}

const farEnd = () => speechClip(NARRATION, { padBeforeMs: 0, padAfterMs: 0 }).pcm;
const toneBursts = { kind: 'tone', freqHz: 1000, bursts: 4, onMs: 1000, offMs: 1000, relativeToEchoDb: -10 } as const;

describe.skipIf(!runnable)(`echo cancellation end to end (duplex=${DUPLEX}, echo room 87 ms, -6 dB)`, () => {
  let peer: TestAssistantPeerProcess;
  let room: EchoRoom;
  let agent: AgentProcess | undefined;

  beforeAll(async () => {
    peer = new TestAssistantPeerProcess({ workspaceKey: KEY, ringSeconds: 60 });
    await peer.start();
    room = new EchoRoom({ delayMs: 87, attenuationDb: 6, noiseDbfs: -70 });
    await room.start();
  }, 60_000);

  afterAll(async () => {
    await agent?.stop();
    await room?.stop();
    await peer?.kill();
  });

  /** A fresh agent (and call) per test: every test starts unconverged. */
  async function freshAgent(): Promise<void> {
    await agent?.stop();
    agent = startAgent(peer.url, KEY);
    await agent.connected;
    await sleep(2000); // the devices' streams start
  }

  /** A fresh agent and the scenario, in a room that held still. The room's streams may glitch under load (a pacat
   *  underrun moves its echo 10-70 ms until the room undoes it: echoRoom.ts), a move no real room makes: a run in
   *  which the room corrected itself measured the room's fault, not the agent's, and is made again with a fresh
   *  agent (3 runs at most, the last one judged whatever happened; as doctor's echo check, echoCheck.test.ts). CI's
   *  run of 7741b03 failed (i) so: 9.8 dB in the second after the room's correction, 28.8-60 dB in the nine before.
   *  The agent's own underruns are not the room's: such a run counts. Every run made again is named in the
   *  message (and on stderr when the test passes). */
  async function inSteadyRoom(scenario: () => Promise<ScenarioResult>, figures: (r: ScenarioResult) => string): Promise<{ r: ScenarioResult; again: string }> {
    const voided: string[] = [];
    for (;;) {
      await freshAgent();
      const r = await scenario();
      if (r.roomCorrections === 0 || voided.length === 2) {
        const again = voided.length ? `; made again after the room glitched: ${voided.join(' | ')}` : '';
        if (again) process.stderr.write(`echo e2e${again}\n`);
        return { r, again };
      }
      voided.push(`room corrections ${r.roomCorrections}, ${figures(r)}`);
      await room.measureDelay(); // the room settled (its next measurement) before the next run
    }
  }

  it('(i) echo only: ERLE >= 25 dB on what the peer receives, after convergence; the user is still heard', async () => {
    const figures = (r: ScenarioResult) => `ERLE per second ${r.echo.perSecondDb.join(' ')}; path ${r.delayStartMs.toFixed(0)} ms; heard ${r.doubleTalk!.heard.toFixed(2)}`;
    const { r, again } = await inSteadyRoom(() => runEchoScenario({ room, peer, farEnd: farEnd(), echoOnlyS: 10, nearEnd: toneBursts }), figures);
    const info = `${figures(r)}${account(agent, r)}${again}`;
    expect(r.echo.erleWindows, info).toBeGreaterThan(10);
    expect(r.echo.erleDb, info).toBeGreaterThanOrEqual(25);
    expect(r.doubleTalk!.heard, info).toBeGreaterThanOrEqual(0.8);
  }, 240_000);

  it('(ii) double talk: near-end speech 10 dB below the echo reaches the peer (the recogniser gets it, or it correlates)', async () => {
    const text = 'set the volume to forty percent';
    const command = speechClip(text, { padBeforeMs: 0, padAfterMs: 0 }).pcm;
    const talk = (r: ScenarioResult) => r.doubleTalk as { heard: number; windows: number; meanCorr: number };
    const { r, again } = await inSteadyRoom(
      () => runEchoScenario({ room, peer, farEnd: farEnd(), echoOnlyS: 5, nearEnd: { kind: 'speech', pcm: command, relativeToEchoDb: -10 } }),
      (r) => `heard in ${(talk(r).heard * 100).toFixed(0)} % of the windows`,
    );
    const dt = talk(r);
    // what the device sent while the user spoke, to the companion's own recogniser (pocketsphinx, command grammar)
    const spoken = r.sent.subarray(Math.max(0, r.nearStart - 4800), r.nearStart + command.length + 9600);
    const recognizer = new PocketsphinxRecognizer();
    const heardText = (await recognizer.recognize(resample(spoken, 48_000, 16_000)).finally(() => recognizer.close())).text;
    const info = `recognised "${heardText}"; double talk: ${dt.windows} windows, mean correlation with the clean speech ${dt.meanCorr.toFixed(2)}, heard in ${(dt.heard * 100).toFixed(0)} %${account(agent, r)}${again}`;
    expect(dt.windows, info).toBeGreaterThan(5);
    // pocketsphinx is fragile: with the echo 20 dB below the user and no canceller it already misheard the command
    // (correlation 0.70), so either proof counts: the words, or the speech itself in >= 80 % of the windows
    expect(heardText === text || dt.heard >= 0.8, info).toBe(true);
  }, 240_000);

  it('(iii) the echo delay changes mid-call (87 -> 150 ms): re-tracked without a restart', async () => {
    const figures = (r: ScenarioResult) => `after the change: ERLE per second ${r.afterChange!.perSecondDb.join(' ')}, path ${r.delayEndMs.toFixed(0)} ms; heard ${r.doubleTalk!.heard.toFixed(2)}`;
    const { r, again } = await inSteadyRoom(
      // back to 87 ms after each run: for a run made again, and for the next test
      () => runEchoScenario({ room, peer, farEnd: farEnd(), echoOnlyS: 6, delayChange: { delayMs: 150, afterChangeS: 8 }, nearEnd: toneBursts }).finally(() => room.setDelay(87)),
      figures,
    );
    const after = r.afterChange!;
    const info = `${figures(r)}${account(agent, r)}${again}`;
    expect(r.delayEndMs, info).toBeGreaterThan(140);
    expect(after.erleDb, info).toBeGreaterThanOrEqual(25);
    expect(r.doubleTalk!.heard, info).toBeGreaterThanOrEqual(0.8);
  }, 240_000);
});

describe.skipIf(!runnable)(`barge-in against the companion (duplex=${DUPLEX}, echo room 87 ms, -6 dB)`, () => {
  let companion: TestCompanion;
  let room: EchoRoom;
  let agent: AgentProcess | undefined;

  beforeAll(async () => {
    companion = await startTestCompanion();
    room = new EchoRoom({ delayMs: 87, attenuationDb: 6, noiseDbfs: -70 });
    await room.start();
  }, 90_000);

  afterAll(async () => {
    await agent?.stop();
    await room?.stop();
    await companion?.close();
  });

  /** RMS of what the speaker played over the next ~1.5 s, dBFS. */
  const speakerLevel = async () => rmsDbfs(await recordSource(VIRTUAL.speakerMonitor, 1500));

  it('(iv) the companion narrates a story into the room, does not hear its own echo, and stops when the user says "stop"', async () => {
    agent = startAgent(companion.url, companion.workspaceKey);
    await agent.connected;
    const said = agent.userSaid;
    await sleep(2000);
    await room.playNearEnd(speechClip('read me a story', { padBeforeMs: 200, padAfterMs: 200 }).pcm, { dbfs: -20 });
    // the story starts (speech on the speaker)
    const levels: number[] = [];
    for (let i = 0; i < 15 && !(levels.at(-1)! > -45); i++) levels.push(await speakerLevel());
    expect(levels.at(-1), `speaker levels ${levels.map((l) => l.toFixed(0)).join(' ')}; user said ${JSON.stringify(said)}`).toBeGreaterThan(-45);
    expect(said).toEqual(['read me a story']);
    // 6 s into the story it still narrates and the server heard nothing from the user: its own echo did not reach
    // it (without a canceller the echo cuts the story and starts a loop of "Sorry, I can't help with that")
    await sleep(4500);
    expect(await speakerLevel(), 'the story is no longer playing').toBeGreaterThan(-45);
    expect(said, `the companion heard its own echo as the user; canceller: ${agent.aecLog.join(', ')}; its blocks (dB, @ the delay estimate where it moves, ^ the output's loudest 20 ms in dBFS when over -60): ${agent.blocks.join(' ')}`).toEqual(['read me a story']);
    // the user says "stop" as loud as the echo
    await room.playNearEnd(speechClip('stop', { padBeforeMs: 100, padAfterMs: 100 }).pcm, { relativeToEchoDb: 0 });
    const after: number[] = [];
    for (let i = 0; i < 6 && !(after.at(-1)! < -50); i++) after.push(await speakerLevel());
    expect(said, `the companion did not hear "stop"; canceller: ${agent.aecLog.join(', ')}; its blocks: ${agent.blocks.join(' ')}`).toContain('stop');
    expect(after.at(-1), `speaker levels after "stop": ${after.map((l) => l.toFixed(0)).join(' ')} dBFS; user said ${JSON.stringify(said)}`).toBeLessThan(-50);
    // and it stays stopped
    expect(await speakerLevel()).toBeLessThan(-50);
  }, 120_000);
});

// One echo-cancellation run on the echo room (echoRoom.ts) with an agent in a call to the test peer: the peer
// narrates (far end), the room sends it back into the mic, the user speaks over it, and echoMetrics.ts turns what
// the room wrote and what the peer received into figures. Shared by bench/agent-echo.bench.ts and
// test/agent/echo.e2e.test.ts. Timeline (room time):
//   marker chirp (near end, no far end yet: every mode passes it) -> far end starts -> echo only for echoOnlyS
//   [-> delay change, echo only for afterChangeS] -> double talk (near end over the far end) -> end.
import type { EchoRoom, RoomCapture } from './echoRoom.js';
import {
  alignSent,
  doubleTalkSpeech,
  doubleTalkTone,
  echoFigures,
  markerChirp,
  RATE,
  sentOnRoom,
  type DoubleTalkFigures,
  type EchoFigures,
} from './echoMetrics.js';
import { tone } from './audioCapture.js';
import type { TestAssistantPeerProcess } from './testAssistantPeer.js';

/** The far end: a story for flite to narrate (~40 s), long enough for echo only, a delay change and double talk. */
export const NARRATION =
  'Once upon a time, in a small village by the sea, there lived an old fisherman and his wife. Every morning he ' +
  'rowed out beyond the rocks, and every evening he came home with a basket of silver fish. One day his net ' +
  'caught something heavy, and when he pulled it up he found a golden fish that could speak. Let me go, said the ' +
  'fish, and I will grant you a wish. The fisherman was a kind man, so he let the fish go and asked for nothing. ' +
  'When he told his wife, she was angry, and she sent him back to the shore to ask for a new washing tub. The sea ' +
  'was calm and blue, and the fish came when he called. Go home, it said, your wife has her tub. But the next ' +
  'day she wanted a new house, and the day after that she wanted to be a great lady in a palace of stone.';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export type NearEnd =
  | { kind: 'tone'; freqHz: number; bursts: number; onMs: number; offMs: number; relativeToEchoDb: number }
  | { kind: 'speech'; pcm: Int16Array; relativeToEchoDb: number };

export interface ScenarioOptions {
  room: EchoRoom;
  peer: TestAssistantPeerProcess;
  /** the far end's speech, 48 kHz mono; must outlast the run */
  farEnd: Int16Array;
  echoOnlyS: number;
  delayChange?: { delayMs: number; afterChangeS: number };
  nearEnd?: NearEnd;
}

export interface ScenarioResult {
  echo: EchoFigures;
  afterChange?: EchoFigures;
  doubleTalk?: DoubleTalkFigures & { meanCorr?: number };
  /** the room's measured delay at the start and at the end of the run */
  delayStartMs: number;
  delayEndMs: number;
  /** the room's glitch corrections during the run (each one shifts the delay: a small re-convergence) */
  roomCorrections: number;
  alignCorr: number;
  /** room index where the near end (after the marker) starts */
  nearStart: number;
  capture: RoomCapture;
  sent: Int16Array;
  /** performance.now() when the room's capture (index 0) started: places the room's timeline against a log's */
  capturedFrom: number;
}

/** Waits until the room hears echo (the far end reached the speaker), at most timeoutMs. */
async function waitEcho(room: EchoRoom, timeoutMs: number): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!Number.isFinite(await room.echoLevelDbfs())) {
    if (performance.now() > end) throw new Error(`echo scenario: no echo within ${timeoutMs} ms (is the agent playing into "speaker"?)`);
    await sleep(50);
  }
}

export async function runEchoScenario(o: ScenarioOptions): Promise<ScenarioResult> {
  const { room, peer } = o;
  const m0 = await room.measureDelay();
  const t0 = performance.now();
  await room.startCapture();
  const marker = markerChirp();
  await room.playNearEnd(marker, { dbfs: -18 });
  await sleep(800);
  await peer.playTone(o.farEnd);
  await waitEcho(room, 10_000);
  await sleep(o.echoOnlyS * 1000);
  if (o.delayChange) {
    await room.setDelay(o.delayChange.delayMs);
    await sleep(o.delayChange.afterChangeS * 1000);
  }
  const ne = o.nearEnd;
  if (ne?.kind === 'tone') {
    const burst = tone(ne.freqHz, ne.onMs, 8000);
    const pcm = new Int16Array(Math.round(((ne.onMs + ne.offMs) * ne.bursts * RATE) / 1000));
    for (let b = 0; b < ne.bursts; b++) pcm.set(burst, Math.round(((ne.onMs + ne.offMs) * b * RATE) / 1000));
    await room.playNearEnd(pcm, { relativeToEchoDb: ne.relativeToEchoDb });
    await sleep((pcm.length / RATE) * 1000 + 300);
  } else if (ne?.kind === 'speech') {
    await room.playNearEnd(ne.pcm, { relativeToEchoDb: ne.relativeToEchoDb });
    await sleep((ne.pcm.length / RATE) * 1000 + 300);
  }
  const capture = await room.stopCapture();
  const m1 = await room.measureDelay();
  const sent = await peer.lastReceived(performance.now() - t0 + 3000);

  // the marker: the first near-end samples of the capture
  const markerAt = capture.near.findIndex((v) => v !== 0);
  if (markerAt < 0) throw new Error('echo scenario: the marker is not in the capture');
  const { offset, corr } = alignSent(sent, capture, markerAt, marker.length);
  const onRoom = sentOnRoom(sent, offset, capture.mic.length);
  const afterMarker = markerAt + marker.length + RATE / 10;
  let nearStart = capture.mic.length;
  for (let i = afterMarker; i < capture.near.length; i++) {
    if (capture.near[i] !== 0) {
      nearStart = i;
      break;
    }
  }
  const change = capture.delayLog.length > 1 ? capture.delayLog[1].index : undefined;
  const echo = echoFigures(capture, onRoom, afterMarker, change ?? nearStart);
  const afterChange = change !== undefined ? echoFigures(capture, onRoom, change, nearStart) : undefined;
  let doubleTalk: ScenarioResult['doubleTalk'];
  if (ne?.kind === 'tone') doubleTalk = doubleTalkTone(capture, onRoom, ne.freqHz, nearStart, capture.mic.length);
  else if (ne?.kind === 'speech') doubleTalk = doubleTalkSpeech(capture, onRoom, nearStart, capture.mic.length);
  return {
    echo,
    afterChange,
    doubleTalk,
    delayStartMs: m0.delayMs,
    delayEndMs: m1.delayMs,
    roomCorrections: m1.corrections - m0.corrections,
    alignCorr: corr,
    nearStart,
    capture,
    sent: onRoom,
    capturedFrom: t0,
  };
}

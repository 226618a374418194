// A microphone that appears while the speaker's stream is open (portAudioBackend.test.ts), as the agent meets it: the
// speaker is opened and plays 1 kHz; the microphone, named `name`, is started through the agent's ResilientCapture
// (retrying while it is missing); then a capture PCM "lateMic" is defined in ~/.asoundrc (HOME is the test's own
// directory) on the speaker's monitor, as a USB microphone plugged in would appear. Prints, as JSON: the device names
// PortAudio listed meanwhile, the microphone's state and error before the PCM was defined, the frames captured
// after, their dominant frequency. argv: the name, and how long to wait for the frames (ms, 10 s). Its own process: PortAudio's device list is per process, made at its first start.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { PortAudioBackend } from '../../src/agent/audio/portAudioBackend.js';
import { ResilientCapture } from '../../src/agent/audio/resilientDevice.js';
import { dominantFrequency, tone } from './audioCapture.js';

const name = process.argv[2] ?? 'lateMic';
const waitMs = Number(process.argv[3] ?? 10_000); // for the 75 frames after the PCM is defined
const backend = new PortAudioBackend();
const speaker = backend.openPlayback('default');
await speaker.start();
const beep = tone(1000, 20);
const feed = setInterval(() => {
  while (speaker.queuedMs < 80) speaker.write(beep);
}, 10);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const frames: Int16Array[] = [];
const mic = new ResilientCapture({ backend, deviceName: name, minBackoffMs: 100, maxBackoffMs: 300 });
await mic.start((f) => frames.push(f.slice()));
await sleep(500); // a few attempts while it is missing
const before = { state: mic.state, error: mic.lastError?.code, message: mic.lastError?.message };
writeFileSync(path.join(process.env.HOME!, '.asoundrc'), 'pcm.lateMic {\n  type pulse\n  device "speaker.monitor"\n}\n');
const names = backend.listDevices().map((d) => d.name);
const end = Date.now() + waitMs;
while (frames.length < 75 && Date.now() < end) await sleep(20);
const after = { state: mic.state, error: mic.lastError?.code, message: mic.lastError?.message };
await mic.stop();
clearInterval(feed);
await speaker.stop();
const heard = new Int16Array(Math.max(0, frames.length - 25) * 960);
frames.slice(25).forEach((f, i) => heard.set(f, i * 960)); // from the second half second: the monitor's start
process.stdout.write(JSON.stringify({ names, before, after, frames: frames.length, dominantHz: heard.length ? dominantFrequency(heard) : undefined }) + '\n');

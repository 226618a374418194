// A speaker and a microphone open on the virtual card, kept fed, while the test stops this process now and then
// (SIGSTOP: PortAudio's thread stops too, so the sound server runs the stream dry, an xrun PortAudio reports in its
// next callback's flags and alsa-lib, for this plugin device, on stderr). Prints "open" once both streams run, then a
// JSON line every 100 ms: the backend's xruns (PortAudio's flags), alsa-lib's lines counted by speaker-sys, the
// speaker's frames so far and the streams' failures; and a last one when stdin closes.
import { PortAudioBackend } from '../../src/agent/audio/portAudioBackend.js';
import { alsaXruns } from '../../src/agent/audio/quietStderr.js';

const backend = new PortAudioBackend();
const speaker = backend.openPlayback('default');
const mic = backend.openCapture('default');
let handed = 0;
// a stream that fails (its stall watchdog) takes no more audio: said, so a test without xruns says why
const errors: string[] = [];
speaker.onError = (err) => errors.push(`speaker: ${err.message}`);
mic.onError = (err) => errors.push(`microphone: ${err.message}`);
speaker.onHanded = () => {
  handed++;
  speaker.write(new Int16Array(960));
};
await speaker.start();
speaker.write(new Int16Array(960));
speaker.write(new Int16Array(960));
await mic.start(() => undefined);
process.stdout.write('open\n');
const line = () => JSON.stringify({ xruns: backend.xruns(), alsa: alsaXruns(), handed, errors });
const report = setInterval(() => process.stdout.write(`${line()}\n`), 100);
process.stdin.resume();
await new Promise((r) => process.stdin.once('end', r));
clearInterval(report);
await Promise.all([speaker.stop(), mic.stop()]);
process.stdout.write(`${line()}\n`);

// A speaker and a microphone open on the virtual card, kept fed, while the test stops this process now and then
// (SIGSTOP: PortAudio's thread stops too, so the sound server runs the stream dry, an xrun PortAudio reports in its
// next callback's flags and alsa-lib, for this plugin device, on stderr). Prints "open" once both streams run, then a
// JSON line each time a count changes: the backend's xruns (PortAudio's flags), alsa-lib's lines counted by
// speaker-sys, and the speaker's frames so far; and a last one when stdin closes.
import { PortAudioBackend } from '../../src/agent/audio/portAudioBackend.js';
import { alsaXruns } from '../../src/agent/audio/quietStderr.js';

const backend = new PortAudioBackend();
const speaker = backend.openPlayback('default');
const mic = backend.openCapture('default');
let handed = 0;
speaker.onHanded = () => {
  handed++;
  speaker.write(new Int16Array(960));
};
await speaker.start();
speaker.write(new Int16Array(960));
speaker.write(new Int16Array(960));
await mic.start(() => undefined);
process.stdout.write('open\n');
const line = () => JSON.stringify({ xruns: backend.xruns(), alsa: alsaXruns(), handed });
let last = '';
const report = setInterval(() => {
  const counts = JSON.stringify([backend.xruns(), alsaXruns()]);
  if (counts !== last) process.stdout.write(`${line()}\n`);
  last = counts;
}, 100);
process.stdin.resume();
await new Promise((r) => process.stdin.once('end', r));
clearInterval(report);
await Promise.all([speaker.stop(), mic.stop()]);
process.stdout.write(`${line()}\n`);

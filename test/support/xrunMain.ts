// A speaker and a microphone open on the virtual card, kept fed, while the test stops this process now and then
// (SIGSTOP: PortAudio's thread stops too, so the sound server runs the stream dry, an xrun alsa-lib reports when it
// resumes). Prints "open" once both streams run, the backend's xrun count (and the speaker's frames so far) as a JSON
// line each time it changes, and a last JSON line when stdin closes.
import { PortAudioBackend } from '../../src/agent/audio/portAudioBackend.js';

const backend = new PortAudioBackend();
const speaker = backend.openPlayback('default');
const mic = backend.openCapture('default');
let handed = 0;
let captured = 0;
speaker.onHanded = () => {
  handed++;
  speaker.write(new Int16Array(960));
};
await speaker.start();
speaker.write(new Int16Array(960));
speaker.write(new Int16Array(960));
await mic.start(() => captured++);
process.stdout.write('open\n');
let last = '';
const report = setInterval(() => {
  const now = JSON.stringify({ xruns: backend.xruns() });
  if (now !== last) process.stdout.write(`${JSON.stringify({ xruns: backend.xruns(), handed })}\n`);
  last = now;
}, 100);
process.stdin.resume();
await new Promise((r) => process.stdin.once('end', r));
clearInterval(report);
await Promise.all([speaker.stop(), mic.stop()]);
process.stdout.write(JSON.stringify({ handed, captured, xruns: backend.xruns() }) + '\n');

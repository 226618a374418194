// The agent's audio under the environment its device-format advice names (PA_ALSA_PLUGHW=1, classifyPortAudioError):
// lists PortAudio's devices and records the default device until 25 frames (half a second) came, or 10 s passed;
// prints the names and the frames, as JSON. Run in its own process because PortAudio reads the variable when it
// starts.
import { PortAudioBackend } from '../../src/agent/audio/portAudioBackend.js';

const backend = new PortAudioBackend();
const names = backend.listDevices().map((d) => d.name);
const cap = backend.openCapture('default');
let frames = 0;
await cap.start(() => frames++);
const end = Date.now() + 10_000;
while (frames < 25 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
await cap.stop();
process.stdout.write(JSON.stringify({ names, frames }) + '\n');

// A speaker opened by a process that may not use real-time scheduling (started under `setpriv` without
// CAP_SYS_NICE, RLIMIT_RTPRIO 0), as the agent is under a unit without LimitRTPRIO: prints the audio thread's
// report and how many frames the stream took meanwhile, as JSON.
import { PortAudioBackend } from '../../src/agent/audio/portAudioBackend.js';

const pb = new PortAudioBackend().openPlayback('default');
let realtime: number | undefined;
let handed = 0;
pb.onRealtime = (errno) => (realtime = errno);
pb.onHanded = () => {
  handed++;
  pb.write(new Int16Array(960));
};
await pb.start();
pb.write(new Int16Array(960));
const end = Date.now() + 5000;
while (Date.now() < end && (realtime === undefined || handed < 25)) await new Promise((r) => setTimeout(r, 50));
await pb.stop();
process.stdout.write(JSON.stringify({ realtime, handed }) + '\n');

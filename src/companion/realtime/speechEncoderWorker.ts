// Worker-thread entry of ThreadSpeechEncoder (speechEncoder.ts): resampling and Opus encoding of assistant speech
// for every call, at a lower CPU priority than the event loop that paces the frames.
// Protocol: main -> worker { type: 'audio', ch, gen, rate, pcm, last } | { type: 'close', ch } | { type: 'stop' }
//           (stop: exit between two messages; terminate() during a native Opus call can abort the whole process)
//           | { type: 'crash' } (throws: fault-injection tests)
//           worker -> main { type: 'packets', ch, gen, consumed, last, data, sizes } (data: the packets back to back)
//                           | { type: 'error', ch, gen, consumed, last, message }
import { parentPort } from 'node:worker_threads';
import { lowerThisThreadPriority } from '../../common/workerThread.js';
import { SpeechFrameEncoder } from './speechFrameEncoder.js';
import { ENCODER_THREAD_NICE } from './speechEncoder.js';

interface AudioMsg {
  type: 'audio';
  ch: number;
  gen: number;
  rate: number;
  pcm: Int16Array;
  last: boolean;
}
type InMsg = AudioMsg | { type: 'close'; ch: number } | { type: 'stop' } | { type: 'crash' };

const port = parentPort!;
const channels = new Map<number, SpeechFrameEncoder>();
await lowerThisThreadPriority(ENCODER_THREAD_NICE);

port.on('message', (m: InMsg) => {
  if (m.type === 'stop') process.exit(0);
  if (m.type === 'crash') throw new Error('encoder thread crash requested');
  if (m.type === 'close') {
    channels.delete(m.ch);
    return;
  }
  const consumed = m.pcm?.length ?? 0;
  try {
    if (!(m.pcm instanceof Int16Array)) throw new TypeError('pcm must be an Int16Array');
    let enc = channels.get(m.ch);
    if (!enc) channels.set(m.ch, (enc = new SpeechFrameEncoder()));
    const packets = enc.encode(m.gen, m.rate, m.pcm, m.last);
    let total = 0;
    for (const p of packets) total += p.length;
    const data = new Uint8Array(total);
    const sizes = new Uint16Array(packets.length);
    let off = 0;
    packets.forEach((p, i) => {
      data.set(p, off);
      off += p.length;
      sizes[i] = p.length;
    });
    port.postMessage({ type: 'packets', ch: m.ch, gen: m.gen, consumed, last: m.last, data, sizes }, [data.buffer, sizes.buffer]);
  } catch (err) {
    port.postMessage({ type: 'error', ch: m.ch, gen: m.gen, consumed, last: m.last, message: String((err as Error).message ?? err) });
  }
});
port.postMessage({ type: 'ready' });

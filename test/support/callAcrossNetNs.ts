// A real SpeakerAgent (PortAudio on the virtual card, werift) in a call with the TEST PEER, which runs in its own
// process inside a network namespace (netns.ts): what the e2e tests of a bad network start from.
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SpeakerAgent } from '../../src/agent/agent.js';
import { PortAudioBackend } from '../../src/agent/audio/portAudioBackend.js';
import { ensureIdentity } from '../../src/agent/identity.js';
import { AmixerMixer } from '../../src/agent/mixer/amixerMixer.js';
import { parseSettings } from '../../src/agent/settings.js';
import { silentLogger } from '../../src/common/logger.js';
import { waitUntil } from './audioCapture.js';
import type { NetNs } from './netns.js';
import { TestAssistantPeerProcess, type TestPeerOptions } from './testAssistantPeer.js';
import { VIRTUAL } from './virtualAudio.js';

export interface CallAcrossNetNs {
  peer: TestAssistantPeerProcess;
  agent: SpeakerAgent;
}

/** Starts the peer in `ns` and an agent with a fresh identity against it (2 s request timeout, so attempts during
 *  an outage end quickly); resolves once the first call is connected. `started` hears both as soon as they exist,
 *  so the caller's cleanup stops them even when the call never comes. */
export async function callAcrossNetNs(
  ns: NetNs,
  key: string,
  appSource: string,
  started: (c: Partial<CallAcrossNetNs>) => void,
  more: { peer?: Partial<TestPeerOptions>; listening?: { mode: 'wake' | 'always' | 'manual' }; firstCallMs?: number } = {},
): Promise<CallAcrossNetNs> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), `${appSource}-`));
  const { identity } = await ensureIdentity(path.join(tmp, 'state'));
  const peer = new TestAssistantPeerProcess({ workspaceKey: key, host: ns.nsIp, netns: ns.name, ...more.peer });
  started({ peer });
  await peer.start();
  const settings = parseSettings({
    server: { url: peer.url, workspaceKey: key, appSource, requestTimeoutMs: 2_000 },
    audio: { captureDevice: 'default', playbackDevice: 'default', duplex: 'half' },
    mixer: { card: 'default', control: VIRTUAL.mixerControl },
    ...(more.listening ? { listening: more.listening } : {}),
  });
  const agent = new SpeakerAgent({ settings, identity, audio: new PortAudioBackend(), mixer: new AmixerMixer({ card: 'default', control: VIRTUAL.mixerControl }), logger: silentLogger });
  started({ peer, agent });
  await agent.start();
  await waitUntil(() => agent.snapshot().state === 'connected', more.firstCallMs ?? 20_000, 'the first call');
  return { peer, agent };
}

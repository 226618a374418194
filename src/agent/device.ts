// The device wired from its settings and identity, in one place: the client for the service, the mixer, the
// audio backend and the transport factory. The daemon (agent.ts, cli/runAgent.ts), enroll, doctor and the CLI
// commands all take them from here. The audio addon and werift load on first use (dynamic imports): `enroll`,
// `volume` and the other light commands import this module without paying for them. (agent.ts's default
// transport factory is the same WebrtcTransport with the same options, imported statically: see there.)
import type { AudioBackend } from './audio/audioDevice.js';
import type { Identity } from './identity.js';
import { AmixerMixer } from './mixer/amixerMixer.js';
import { ServiceClient } from './serviceClient.js';
import { isLoopbackUrl, type Settings } from './settings.js';
import type { TransportFactory } from './transport/transportLayer.js';
import type { WebrtcTransportOptions } from './transport/webrtcTransport.js';
import { TurnRotation } from './transport/turnRotation.js';

/** A client for the service with this device's headers. */
export function serviceClient(s: Settings, identity: Pick<Identity, 'clientId' | 'clientSecret'>): ServiceClient {
  return new ServiceClient({
    baseUrl: s.server.url,
    protocol: s.server.protocol,
    tokenUrl: s.server.tokenUrl,
    credentials: { workspaceKey: s.server.workspaceKey, clientId: identity.clientId, clientSecret: identity.clientSecret, appSource: s.server.appSource },
    timeoutMs: s.server.requestTimeoutMs,
  });
}

/** The mixer named by the settings (card + control; control found automatically when unset). */
export async function openMixer(s: Settings): Promise<AmixerMixer> {
  return new AmixerMixer({ card: s.mixer.card, control: s.mixer.control });
}

/** The PortAudio backend, loaded lazily: the native addon costs ~100 ms and is not needed by every command. */
export async function audioBackend(): Promise<AudioBackend> {
  const { PortAudioBackend } = await import('./audio/portAudioBackend.js');
  return new PortAudioBackend();
}

/** werift gathers no loopback candidates unless told: 'auto' adds 127.0.0.1 when the server is on loopback. */
export function webrtcTransportOptions(s: Settings): WebrtcTransportOptions {
  const loopback = s.call.loopbackCandidates === 'always' || (s.call.loopbackCandidates === 'auto' && isLoopbackUrl(s.server.url));
  return { additionalHostAddresses: loopback ? ['127.0.0.1'] : undefined, turn: new TurnRotation() };
}

/** A WebRTC transport per call (werift loaded on first use); the calls share one choice of TURN URL. */
export async function transportFactory(s: Settings): Promise<TransportFactory> {
  const { WebrtcTransport } = await import('./transport/webrtcTransport.js');
  const options = webrtcTransportOptions(s);
  return () => new WebrtcTransport(options);
}

export interface WiredDevice {
  client: ServiceClient;
  mixer: AmixerMixer;
  audio: AudioBackend;
  transportFactory: TransportFactory;
}

/** Everything the daemon needs besides its settings, identity and logger. */
export async function wireDevice(s: Settings, identity: Identity): Promise<WiredDevice> {
  const [mixer, audio, transports] = await Promise.all([openMixer(s), audioBackend(), transportFactory(s)]);
  return { client: serviceClient(s, identity), mixer, audio, transportFactory: transports };
}

import { describe, expect, it } from 'vitest';
import { openMixer, serviceClient, transportFactory, webrtcTransportOptions } from '../../src/agent/device.js';
import { parseSettings } from '../../src/agent/settings.js';
import { WebrtcTransport } from '../../src/agent/transport/webrtcTransport.js';

const settings = (url: string, loopbackCandidates: string) => parseSettings({ server: { url, workspaceKey: 'wk' }, call: { loopbackCandidates } });

describe('the device wiring', () => {
  it('gathers 127.0.0.1 when told to, or on auto when the server is on loopback', () => {
    const rows = [
      ['http://127.0.0.1:8080', 'auto', ['127.0.0.1']],
      ['http://localhost:8080', 'auto', ['127.0.0.1']],
      ['https://voice.example.com', 'auto', undefined],
      ['https://voice.example.com', 'always', ['127.0.0.1']],
      ['http://127.0.0.1:8080', 'never', undefined],
    ] as const;
    for (const [url, mode, hosts] of rows) expect(webrtcTransportOptions(settings(url, mode)).additionalHostAddresses, `${url} ${mode}`).toEqual(hosts);
  });

  it('builds a WebRTC transport per call, the mixer and the client from the settings', async () => {
    const s = parseSettings({ server: { url: 'https://voice.example.com', workspaceKey: 'wk' }, mixer: { card: '1', control: 'PCM' } });
    const make = await transportFactory(s);
    const [a, b] = [make(), make()];
    expect(a).toBeInstanceOf(WebrtcTransport);
    expect(a).not.toBe(b);
    expect((await openMixer(s)).description).toBe('card 1, control PCM');
    expect(serviceClient(s, { clientId: 'c', clientSecret: 's' })).toBeDefined();
  });
});

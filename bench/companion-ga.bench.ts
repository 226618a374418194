// Issue #19: the companion's GA routes with stock clients. Offer -> connected for the official realtime SDK
// (@openai/agents-realtime, its browser bundle in headless Chromium: mint a client key, connect, session.updated
// acknowledged) and for a werift client posting to /v1/realtime/calls (data channel open), p50 of N each.
import { launchChromium } from '../test/support/chromiumDriver.js';
import { RealtimeTestClient } from '../test/support/realtimeTestClient.js';
import { startRealtimeTestServer } from '../test/support/realtimeServer.js';
import { speechClip } from '../test/support/speechWav.js';
import { startSdkPage } from '../test/support/stockRealtimeSdk.js';
import { percentile, type BenchRow } from './table.js';

const N = Number(process.env.BENCH_GA_CONNECTS ?? 5);

export async function run(): Promise<BenchRow[]> {
  const srv = await startRealtimeTestServer();
  const page = await startSdkPage();
  const browser = await launchChromium({ fakeMicrophoneWav: speechClip('hello', { padBeforeMs: 5000, padAfterMs: 5000 }).file });
  const mint = async (): Promise<string> => {
    const res = await fetch(`${srv.url}/v1/realtime/client_secrets`, { method: 'POST', headers: srv.newDevice() });
    return ((await res.json()) as { value: string }).value;
  };
  try {
    const sdk: number[] = [];
    for (let i = 0; i < N; i++) {
      const key = await mint();
      await browser.page.goto(page.url);
      await browser.page.evaluate(([base, k]) => (globalThis as any).startSdk(base, k), [srv.url, key] as const);
      sdk.push((await browser.page.evaluate(() => (globalThis as any).connectMs)) as number);
    }
    await browser.page.goto('about:blank');
    const werift: number[] = [];
    for (let i = 0; i < N; i++) {
      const key = await mint();
      const t0 = performance.now();
      const c = await RealtimeTestClient.connect({ baseUrl: srv.url, headers: {}, gaKey: key });
      werift.push(performance.now() - t0);
      await c.close();
    }
    return [
      { issue: '#19', metric: 'stock SDK (Chromium) offer -> connected, p50', value: Math.round(percentile(sdk, 50)), unit: 'ms', note: `max ${Math.round(Math.max(...sdk))}, n=${N}; includes the SDK waiting for session.updated` },
      { issue: '#19', metric: 'werift client GA /v1/realtime/calls -> data channel open, p50', value: Math.round(percentile(werift, 50)), unit: 'ms', note: `max ${Math.round(Math.max(...werift))}, n=${N}` },
    ];
  } finally {
    await browser.close();
    await page.close();
    await srv.close();
  }
}

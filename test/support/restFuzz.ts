// Malformed HTTP requests for the companion's REST and realtime routes (issue 17's fault suite): a seeded generator
// of bad percent-escapes, over-long path parameters, huge headers and bodies, deep JSON, traversal in ids and
// slugs, wrong methods, broken multipart bodies, garbage bytes and bad device headers; and a raw-socket client
// that sends them exactly as written (fetch would refuse or repair many of them) and reads what comes back.
import net from 'node:net';

export interface FuzzCase {
  kind: string;
  /** the path the request names, when it names one (for the expected error shape) */
  path?: string;
  /** sent after bytes, by reference (a large body shared by many requests is not copied) */
  tail?: Buffer;
  /** a request that is odd but valid (an OPTIONS preflight, many small headers, a session body with extra
   *  fields): it may succeed; it must still never get a 5xx */
  mayPass?: boolean;
  bytes: Buffer;
}

export interface FuzzResult {
  kind: string;
  mayPass?: boolean;
  path?: string;
  status: number;
  body: string;
  ms: number;
}

/** mulberry32: a small seeded PRNG, so a failing case can be regenerated */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const UUID = '0b7f3c4e-8a61-4f0e-9f3a-2c5d7e9a1b2c';

export function generateCases(n: number, seed: number, device: Record<string, string>, opts: { maxUploadBytes: number }): FuzzCase[] {
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const deviceLines = Object.entries(device).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  const req = (method: string, path: string, headers: string, body: Buffer | string = '', withDevice = true): Buffer => {
    const b = typeof body === 'string' ? Buffer.from(body) : body;
    const head = `${method} ${path} HTTP/1.1\r\nHost: localhost\r\n${withDevice ? deviceLines : ''}${headers}Content-Length: ${b.length}\r\nConnection: close\r\n\r\n`;
    return Buffer.concat([Buffer.from(head, 'latin1'), b]);
  };
  const badEscapes = ['%zz', '%', '%E0%A4%A', '%C0%AF', '%%', '%2', '%G1', '%ff%fe', 'a%', '%u0041'];
  const traversal = ['..', '../../etc/passwd', '..%2F..%2Fetc%2Fpasswd', '%2e%2e%2f%2e%2e%2f', '....//', '..\\..\\', '%00', 'a%00b', '/etc/passwd', '%2F', '.'];
  const routes = [
    ['GET', '/v1/app/voices'],
    ['POST', '/v1/app/voices/clone'],
    ['POST', '/v1/app/voices/design'],
    ['GET', '/v1/app/stories'],
    ['GET', `/v1/app/stories/x`],
    ['POST', `/v1/app/stories/x/read`],
    ['POST', `/v1/app/text-to-speech/${UUID}/with-timestamps`],
    ['POST', '/v1/realtime/sessions'],
    ['POST', '/v1/realtime'],
    ['GET', '/v1/audio/tts/x.mp3'],
  ] as const;
  const deep = (depth: number) => (rnd() < 0.5 ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth));
  const multipart = (boundary: string, parts: string) => `multipart/form-data; boundary=${boundary}`;
  const kinds: Array<() => FuzzCase> = [
    () => {
      const r = pick(routes);
      const path = r[1].replace(/[^/]+$/, (last) => `${last}${pick(badEscapes)}`);
      return { kind: 'bad escape', path, bytes: req(r[0], path, '') };
    },
    () => {
      const path = pick([`/v1/app/stories/${'s'.repeat(int(101, 8000))}`, `/v1/app/text-to-speech/${'v'.repeat(int(101, 8000))}/with-timestamps`, `/v1/audio/tts/${'f'.repeat(int(101, 4000))}`]);
      return { kind: 'long param', path, bytes: req(path.includes('stories') ? 'GET' : 'POST', path, '') };
    },
    () => {
      const r = pick(routes);
      return { kind: 'huge header', path: r[1], bytes: req(r[0], r[1], `X-Filler: ${'h'.repeat(int(17_000, 80_000))}\r\n`) };
    },
    () => {
      const r = pick(routes);
      const lines = Array.from({ length: int(120, 600) }, (_, i) => `X-H${i}: ${'v'.repeat(int(20, 200))}\r\n`).join('');
      return { kind: 'many headers', path: r[1], bytes: req(r[0], r[1], lines), mayPass: true };
    },
    () => {
      const path = pick(['/v1/app/voices/design', `/v1/app/text-to-speech/${UUID}/with-timestamps`, '/v1/realtime/sessions', '/v1/app/stories/x/read']);
      return { kind: 'huge json body', path, bytes: req('POST', path, 'Content-Type: application/json\r\n', `{"text":"${'x'.repeat(int(1_100_000, 2_000_000))}"}`) };
    },
    () => {
      const path = pick(['/v1/app/voices/design', `/v1/app/text-to-speech/${UUID}/with-timestamps`, '/v1/realtime/sessions']);
      const body = deep(int(500, 200_000));
      return { kind: 'deep json', path, bytes: req('POST', path, 'Content-Type: application/json\r\n', body), mayPass: path.endsWith('/sessions') && body.startsWith('{') };
    },
    () => {
      const path = pick(['/v1/app/voices/design', `/v1/app/text-to-speech/${UUID}/with-timestamps`, '/v1/realtime/sessions', '/v1/app/stories/x/read']);
      const body = pick(['{"a":', '[1,2', '{"text":1e999999}', 'null', '"str"', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{}}}', '\u0000\u0001', '{"text":"\ud800"}', '{"speed":"fast"}', '{"text":""}', '{"design_prompt":[]}']);
      // the session route takes any object (modalities has a default)
      return { kind: 'bad json', path, bytes: req('POST', path, 'Content-Type: application/json\r\n', body), mayPass: path.endsWith('/sessions') && body.startsWith('{"') && !body.endsWith(':') };
    },
    () => {
      const t = pick(traversal);
      const path = pick([`/v1/app/stories/${t}`, `/v1/app/stories/${t}/read`, `/v1/app/text-to-speech/${t}/with-timestamps`, `/v1/audio/${t}/x.mp3`, `/v1/audio/tts/${t}`]);
      return { kind: 'traversal', path, bytes: req(path.endsWith('with-timestamps') || path.endsWith('/read') ? 'POST' : 'GET', path, 'Content-Type: application/json\r\n', path.endsWith('with-timestamps') ? '{"text":"hi"}' : '') };
    },
    () => {
      const r = pick(routes);
      const method = pick(['PUT', 'DELETE', 'PATCH', 'OPTIONS', r[0] === 'GET' ? 'POST' : 'GET', 'BREW']);
      return { kind: 'wrong method', path: r[1], bytes: req(method, r[1], ''), mayPass: method === 'OPTIONS' };
    },
    () => {
      const path = '/v1/app/voices/clone';
      const b = pick(['XyZ', 'b'.repeat(int(71, 400)), 'has space at end ', 'bad;char', '']);
      const variants: Array<[string, string]> = [
        ['multipart/form-data', 'garbage'],
        [multipart(b, ''), `--${b}\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--${b}--\r\n`],
        ['multipart/form-data; boundary=XyZ', `--XyZ\r\nContent-Disposition: form-data; name="audio_file"; filename="a.wav"\r\n\r\n${'a'.repeat(int(10, 5000))}`],
        ['multipart/form-data; boundary=XyZ', `--XyZ\r\nno headers here\r\n\r\nx\r\n--XyZ--\r\n`],
        ['multipart/form-data; boundary=XyZ', `--Other\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--Other--\r\n`],
        ['multipart/form-data; boundary=XyZ', `--XyZ\r\nContent-Disposition: form-data; name="audio_file"\r\n\r\nnot a file\r\n--XyZ--\r\n`],
        ['multipart/form-data; boundary=XyZ', `--XyZ\r\nContent-Disposition: form-data; name="name"\r\n\r\n${'n'.repeat(int(70_000, 90_000))}\r\n--XyZ--\r\n`],
        ['multipart/form-data; boundary=XyZ', `--XyZ\r\nContent-Disposition: form-data; name="audio_file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n${'A'.repeat(opts.maxUploadBytes + int(1, 50_000))}\r\n--XyZ--\r\n`],
        ['multipart/form-data; boundary=XyZ', Array.from({ length: 40 }, (_, i) => `--XyZ\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\nv\r\n`).join('') + '--XyZ--\r\n'],
        ['multipart/form-data; boundary=XyZ', ''],
      ];
      const [ct, body] = pick(variants);
      return { kind: 'bad multipart', path, bytes: req('POST', path, `Content-Type: ${ct}\r\n`, body) };
    },
    () => {
      const garbage = Buffer.from(Array.from({ length: int(1, 3000) }, () => int(0, 255)));
      return { kind: 'garbage', bytes: rnd() < 0.5 ? garbage : Buffer.concat([Buffer.from(`GET /v1/app/voices HTTP/1.1\r\n`), garbage, Buffer.from('\r\n\r\n')]) };
    },
    () => {
      const r = pick(routes);
      const headers = pick([
        '',
        'X-Workspace-Key: nope\r\nX-Client-Id: not-a-uuid\r\nX-Client-Secret: short\r\n',
        `X-Workspace-Key: \r\nX-Client-Id: ${UUID}\r\nX-Client-Secret: ${'s'.repeat(40)}\r\n`,
        `X-Workspace-Key: ${'k'.repeat(5000)}\r\nX-Client-Id: ${UUID}\r\nX-Client-Secret: ${'s'.repeat(40)}\r\n`,
      ]);
      return { kind: 'bad device headers', path: r[1], bytes: req(r[0], r[1], headers, '', false) };
    },
    () => {
      const path = pick(['/v1/realtime', '/v1/realtime/sessions']);
      const [ct, body] = pick([
        ['application/sdp', 'v=0\r\n' + 'a=garbage\r\n'.repeat(int(1, 500))],
        ['application/sdp', ''],
        ['application/sdp', 'm=audio 9 UDP/TLS/RTP/SAVPF 0\r\n'],
        ['text/plain', 'hello'],
        ['application/json', '{"modalities":"all"}'],
        ['application/x-www-form-urlencoded', 'a=b'],
      ] as const);
      return { kind: 'bad realtime body', path, bytes: req('POST', path, `Content-Type: ${ct}\r\n`, body) };
    },
  ];
  return Array.from({ length: n }, () => pick(kinds)());
}

/** Sends the bytes on a fresh connection and reads the response until the server closes or it is complete. */
export function sendRaw(port: number, c: FuzzCase, timeoutMs = 15_000): Promise<FuzzResult> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const chunks: Buffer[] = [];
    const s = net.connect(port, '127.0.0.1');
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      const text = Buffer.concat(chunks).toString('utf8');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      const body = text.includes('\r\n\r\n') ? text.slice(text.indexOf('\r\n\r\n') + 4) : '';
      resolve({ kind: c.kind, path: c.path, mayPass: c.mayPass, status, body, ms: performance.now() - t0 });
    };
    const timer = setTimeout(finish, timeoutMs);
    s.on('data', (d) => {
      chunks.push(d);
      const text = Buffer.concat(chunks).toString('latin1');
      const head = text.indexOf('\r\n\r\n');
      const len = /\r\ncontent-length: (\d+)/i.exec(text.slice(0, head))?.[1];
      if (head >= 0 && len !== undefined && text.length - head - 4 >= Number(len)) finish();
    });
    s.on('error', () => undefined); // EPIPE/ECONNRESET when the server answers before the body is sent
    s.on('close', finish);
    s.write(c.bytes, () => undefined);
    if (c.tail) s.write(c.tail, () => undefined);
  });
}

export async function runCases(port: number, cases: FuzzCase[], concurrency = 8): Promise<FuzzResult[]> {
  const results: FuzzResult[] = new Array(cases.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < cases.length) {
        const i = next++;
        results[i] = await sendRaw(port, cases[i]);
      }
    }),
  );
  return results;
}

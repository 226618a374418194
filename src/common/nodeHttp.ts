// node:http, loaded with require rather than an ESM import. An ESM import of a built-in module reads every export to
// build its namespace, and Node 26's node:http exports WebSocket, CloseEvent and MessageEvent as getters that load
// undici, http2, zlib and the web streams: 90 more internal modules, +3.2 MB of JavaScript heap and +15 MB RSS in
// a bare process (Node 20's node:http has no such getters). The agent uses none of them (issue #18).
import { createRequire } from 'node:module';

export const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');

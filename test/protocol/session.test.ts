import { describe, expect, it } from 'vitest';
import { parseRealtimeSession } from '../../src/protocol/session.js';
import { parseRealtimeErrorBody, realtimeErrorBody, REALTIME_ERRORS } from '../../src/protocol/realtimeErrors.js';
import { REST_ERRORS, RestError } from '../../src/protocol/restErrors.js';

describe('parseRealtimeSession', () => {
  it('keeps TURN credentials and accepts an empty ICE list', () => {
    expect(parseRealtimeSession({ id: 's1', iceServers: [] })).toEqual({ id: 's1', iceServers: [] });
    expect(
      parseRealtimeSession({ id: 's2', iceServers: [{ urls: ['turn:turn.example:3478'], username: 'u', credential: 'c' }] }),
    ).toEqual({ id: 's2', iceServers: [{ urls: ['turn:turn.example:3478'], username: 'u', credential: 'c' }] });
  });
  it('refuses a body without id or with malformed servers', () => {
    expect(parseRealtimeSession({ iceServers: [] })).toBeUndefined();
    expect(parseRealtimeSession({ id: 's', iceServers: [{ urls: [3] }] })).toBeUndefined();
    expect(parseRealtimeSession(null)).toBeUndefined();
  });
});

describe('error registries', () => {
  it('builds the realtime error shape of spec section 7', () => {
    expect(realtimeErrorBody('missing_header', 'X-Client-Id header is required')).toEqual({
      error: { message: 'X-Client-Id header is required', type: 'invalid_request_error', code: 'missing_header' },
    });
    expect(parseRealtimeErrorBody(JSON.stringify(realtimeErrorBody('secret_mismatch', 'no')))).toEqual({ message: 'no', type: 'authentication_error', code: 'secret_mismatch' });
    expect(parseRealtimeErrorBody('<html>bad gateway</html>')).toBeUndefined();
  });
  it('uses only the statuses the spec allows on realtime routes', () => {
    for (const def of Object.values(REALTIME_ERRORS)) expect([400, 401, 404, 500]).toContain(def.status);
  });
  it('keeps the statuses the spec states for REST codes', () => {
    expect(REST_ERRORS.STORY_NOT_FOUND.status).toBe(404);
    expect(REST_ERRORS.VOICE_NOT_AVAILABLE.status).toBe(403);
    const e = new RestError('VOICE_NOT_AVAILABLE', 'the workspace has no voices', { status: 400 });
    expect(e.status).toBe(400);
    expect(e.toBody()).toEqual({ detail: { error: 'the workspace has no voices', code: 'VOICE_NOT_AVAILABLE' } });
  });
});

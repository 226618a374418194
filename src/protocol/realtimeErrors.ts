// Every error code the realtime routes (/v1/realtime*) answer with, in one registry (spec section 7):
// body {error:{message, type, code}}. The README's error table is generated from the same facts.

export type RealtimeErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'not_found_error'
  | 'server_error';

export interface RealtimeErrorDef {
  status: 400 | 401 | 404 | 500;
  type: RealtimeErrorType;
  /** When it is answered, for the documentation table. */
  when: string;
}

export const REALTIME_ERRORS = {
  missing_header: { status: 400, type: 'invalid_request_error', when: 'X-Workspace-Key, X-Client-Id or X-Client-Secret is absent or empty (the message names the header)' },
  invalid_client_secret: { status: 400, type: 'invalid_request_error', when: 'X-Client-Secret is shorter than 32 characters' },
  unsupported_content_type: { status: 400, type: 'invalid_request_error', when: 'Content-Type is not application/json (sessions, client_secrets) or application/sdp (SDP exchange; multipart/form-data also on /v1/realtime/calls)' },
  invalid_json: { status: 400, type: 'invalid_request_error', when: 'the session body is not a JSON object' },
  invalid_modalities: { status: 400, type: 'invalid_request_error', when: 'modalities is not an array of "text"/"audio"' },
  invalid_sdp: { status: 400, type: 'invalid_request_error', when: 'the SDP offer is empty, not SDP, or cannot be negotiated' },
  no_audio_in_offer: { status: 400, type: 'invalid_request_error', when: 'the SDP offer has no audio section with the Opus codec' },
  invalid_session: { status: 400, type: 'invalid_request_error', when: 'a GA session configuration (client_secrets body, the multipart "session" part) is malformed (the message names the field)' },
  invalid_request: { status: 400, type: 'invalid_request_error', when: 'a request that is not well formed HTTP: a bad percent-escape or an over-long path, headers over 16 KiB, a body over the limit, unparseable HTTP' },
  invalid_client_id: { status: 401, type: 'authentication_error', when: 'X-Client-Id is not a UUID' },
  invalid_api_key: { status: 401, type: 'authentication_error', when: 'a GA call route without a valid "Authorization: Bearer ek_..." client key (unknown, expired or absent) and without device headers' },
  invalid_workspace_key: { status: 401, type: 'authentication_error', when: 'X-Workspace-Key matches no workspace' },
  secret_mismatch: { status: 401, type: 'authentication_error', when: 'the client is enrolled with another secret (trust on first use)' },
  client_not_found: { status: 404, type: 'not_found_error', when: 'the workspace does not enroll new clients automatically and this client id was never registered' },
  client_not_activated: { status: 404, type: 'not_found_error', when: 'the client was disabled by an administrator' },
  call_not_found: { status: 404, type: 'not_found_error', when: 'hangup of a call id this device does not hold (ended, or another device\'s)' },
  not_found: { status: 404, type: 'not_found_error', when: 'no such route or method under /v1/realtime' },
  too_many_calls: { status: 500, type: 'server_error', when: 'the server holds its configured maximum of calls' },
  server_error: { status: 500, type: 'server_error', when: 'an unexpected fault on the server' },
  upstream_unavailable: { status: 500, type: 'server_error', when: 'gateway mode (realtime.upstream): the upstream realtime service cannot be reached, refused the call, or its API key variable is not set' },
} as const satisfies Record<string, RealtimeErrorDef>;

export type RealtimeErrorCode = keyof typeof REALTIME_ERRORS;

/** Codes of the `error` events (type invalid_request_error) on the data channel, answered to bad client
 *  messages while the call goes on (documented in the README). */
export const CLIENT_EVENT_ERRORS = {
  invalid_event: 'the message is not JSON, has no "type", or its fields do not match the event',
  unknown_event: 'the event type is not one this server handles',
  unknown_call_id: 'function_call_output names a call_id the server is not waiting for',
  no_pending_function_output: 'response.create arrived with no function_call_output to answer',
  unknown_item_id: 'conversation.item.retrieve, .truncate or .delete names an item this call does not hold (or no longer: the newest 50 are kept)',
  input_audio_buffer_commit_empty: 'input_audio_buffer.commit while the user is not speaking (the public protocol\'s code)',
} as const;
export type ClientEventErrorCode = keyof typeof CLIENT_EVENT_ERRORS;

/** The 404s in the error shape that do not refuse the device (a route, a call). Any other 404 in the shape does:
 *  the spec says a realtime 404 is "client ID not found or not activated" without naming codes, so another
 *  service's own code for it must count as a rejection too. */
export const REALTIME_NOT_A_REJECTION_404: readonly string[] = ['not_found', 'call_not_found'] satisfies RealtimeErrorCode[];

export interface RealtimeErrorBody {
  error: { message: string; type: string; code: string };
}

export function realtimeErrorBody(code: RealtimeErrorCode, message: string): RealtimeErrorBody {
  return { error: { message, type: REALTIME_ERRORS[code].type, code } };
}

/** Reads a realtime error body defensively (a proxy may answer with anything). */
export function parseRealtimeErrorBody(text: string): RealtimeErrorBody['error'] | undefined {
  try {
    const v = JSON.parse(text) as unknown;
    const e = (v as { error?: unknown })?.error as Record<string, unknown> | undefined;
    if (e && typeof e === 'object' && typeof e.message === 'string') {
      return { message: e.message, type: String(e.type ?? ''), code: String(e.code ?? '') };
    }
  } catch {
    /* not JSON */
  }
  return undefined;
}

import { describe, expect, it } from 'vitest';
import { AudioDeviceError } from '../../src/agent/audio/audioDevice.js';
import { AgentError } from '../../src/agent/errors.js';
import { CodedError } from '../../src/common/errors.js';
import { CallLimitError } from '../../src/companion/realtime/callRegistry.js';
import { RestError } from '../../src/protocol/restErrors.js';

describe('CodedError', () => {
  it('carries the code and the cause through every subclass, which keeps its own name', () => {
    const root = new Error('EBUSY');
    const cases: Array<[CodedError, string, string, unknown]> = [
      [new AgentError('network', 'down', { cause: root, status: 502 }), 'AgentError', 'network', root],
      [new AudioDeviceError('device_busy', 'busy', root), 'AudioDeviceError', 'device_busy', root],
      [new RestError('VOICE_NOT_FOUND', 'no voice'), 'RestError', 'VOICE_NOT_FOUND', undefined],
      [new CallLimitError('full'), 'CallLimitError', 'too_many_calls', undefined],
    ];
    for (const [err, name, code, cause] of cases) {
      expect(err).toBeInstanceOf(CodedError);
      expect(err).toBeInstanceOf(Error);
      expect([err.name, err.code, err.cause]).toEqual([name, code, cause]);
      expect(String(err)).toBe(`${name}: ${err.message}`);
    }
    expect((cases[0][0] as AgentError).status).toBe(502);
    expect((cases[2][0] as RestError).status).toBe(404);
  });
});

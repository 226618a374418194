import { describe, expect, it } from 'vitest';
import { writeFailureReason } from '../../src/cli/writeFailure.js';

const errno = (code: string) => Object.assign(new Error(`${code}: something, write`), { code });

describe('writeFailureReason', () => {
  it('words a full, read-only or failing disk', () => {
    expect(writeFailureReason(errno('ENOSPC'))).toMatch(/^no space left on device/);
    expect(writeFailureReason(errno('EROFS'))).toMatch(/read-only file system/);
    expect(writeFailureReason(errno('EIO'))).toMatch(/failing SD card/);
  });

  it('adds the sudo hint to a permission refusal only', () => {
    expect(writeFailureReason(errno('EACCES'), 'sudo speaker-agent enroll ...')).toBe('permission denied (on an installed speaker: sudo speaker-agent enroll ...)');
    expect(writeFailureReason(errno('EACCES'))).toBe('permission denied');
    expect(writeFailureReason(errno('ENOSPC'), 'sudo x')).not.toMatch(/sudo/);
  });

  it('passes anything else through (undefined), including codes named like Object properties', () => {
    expect(writeFailureReason(errno('ENOENT'))).toBeUndefined();
    expect(writeFailureReason(errno('toString'))).toBeUndefined();
    expect(writeFailureReason(new Error('no code'))).toBeUndefined();
    expect(writeFailureReason(undefined)).toBeUndefined();
  });
});

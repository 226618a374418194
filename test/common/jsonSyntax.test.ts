import { describe, expect, it } from 'vitest';
import { jsonSyntaxError } from '../../src/common/jsonSyntax.js';

const SECRET = 'wk_4f9a1c2e8b7d6a5f';

/** JSON.parse(text)'s error, as jsonSyntaxError describes it */
function describeError(text: string): string {
  try {
    JSON.parse(text);
  } catch (err) {
    return jsonSyntaxError(err, text);
  }
  throw new Error(`${text} parsed`);
}

describe('jsonSyntaxError', () => {
  it('regression: a key left unquoted was quoted in the error (V8 quotes 10 characters each side of the token)', () => {
    const text = `{"server":{"url":"http://hub:8787","workspaceKey": ${SECRET}}}`;
    expect(() => JSON.parse(text)).toThrow(/wk_4f9a1c2/); // what V8 itself says
    const msg = describeError(text);
    expect(msg).toBe('not valid JSON: unexpected character at line 1, column 52');
    expect(msg).not.toMatch(/wk_|4f9a/);
  });

  it('names the line and column of the mistake in a file of several lines, the same on every Node', () => {
    expect(describeError(`{\n  "server": {\n    "workspaceKey": ${SECRET}\n  }\n}`)).toBe('not valid JSON: unexpected character at line 3, column 21');
    expect(describeError(`{"k":'${SECRET}'}`)).toBe('not valid JSON: unexpected character at line 1, column 6');
    expect(describeError(`${SECRET}`)).toBe('not valid JSON: unexpected character at line 1, column 1');
    expect(describeError('{"k":"abc",}')).toBe('not valid JSON: expected double-quoted property name at line 1, column 12');
    expect(describeError('{\n"k" "v"}')).toBe("not valid JSON: expected ':' after property name at line 2, column 5");
    expect(describeError(`{"k":"${SECRET}`)).toBe('not valid JSON: unterminated string at line 1, column 26');
    expect(describeError('[1,2] x')).toBe('not valid JSON: unexpected non-whitespace character after the end of the JSON value at line 1, column 7');
    expect(describeError('{"k":')).toMatch(/^not valid JSON: it ends too early/);
    // the same character just before the token: placed by V8's excerpt, not by searching it
    expect(describeError('[1,2,3,4,5,6,7,8,9,10,11,12,,13,14,15,16,17,18,19,20]')).toBe('not valid JSON: unexpected character at line 1, column 29');
    expect(describeError('{"aaaaaaaaaaaaaaaaaaaaaaaaa":,,1}')).toBe('not valid JSON: unexpected character at line 1, column 30');
  });

  it('an error of a form it does not know gives the verdict only, never its text', () => {
    expect(jsonSyntaxError(new SyntaxError(`Something new about "${SECRET}"`), SECRET)).toBe('not valid JSON');
    expect(jsonSyntaxError('not an error', '')).toBe('not valid JSON');
  });
});

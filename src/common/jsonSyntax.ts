// What was wrong with a JSON text, without quoting it. V8's JSON.parse error quotes up to 10 characters each side
// of an unexpected token ('Unexpected token 'w', ..."paceKey": wk_4f9a1c2"... is not valid JSON'), and a
// configuration holds secrets (the workspace key, a TURN credential): a key left unquoted went to the journal and
// to `doctor --json` that way. So the error names the place (line and column) and the kind of mistake, never the
// text. The same message on every Node: Node 20's V8 gives a position, Node 22 and later add line and column.

/** V8 quotes this many characters before the unexpected token (JsonParser::kMaxContextCharacters) */
const CONTEXT_CHARS = 10;

/** "not valid JSON: <what> at line L, column C" for an error JSON.parse(text) threw; no part of `text` in it. */
export function jsonSyntaxError(err: unknown, text: string): string {
  const message = err instanceof Error ? err.message : String(err);
  const token = /^Unexpected token '([\s\S])', (\.\.\.)?"([\s\S]*)"(\.\.\.)? is not valid JSON$/.exec(message);
  if (token) {
    const [, char, lead, excerpt, trail] = token;
    const start = text.indexOf(excerpt);
    // V8 quotes CONTEXT_CHARS before the token ("..." in front) or the text from its start, and CONTEXT_CHARS after
    // it ("..." behind) or the text to its end; a short text whole (then the token's first occurrence, a guess)
    const offset = lead ? CONTEXT_CHARS : trail ? excerpt.length - CONTEXT_CHARS : excerpt.indexOf(char);
    const at = start < 0 || offset < 0 || excerpt[offset] !== char ? -1 : start + offset;
    return `not valid JSON: unexpected character${at >= 0 ? ` at ${lineColumn(text, at)}` : ''}`;
  }
  const positioned = /^([\s\S]*?) (in|after) JSON at position (\d+)/.exec(message);
  if (positioned && !positioned[1].includes('"')) {
    const [, what, where, at] = positioned;
    return `not valid JSON: ${lowerFirst(what)}${where === 'after' ? ' after the end of the JSON value' : ''} at ${lineColumn(text, Number(at))}`;
  }
  if (/^Unexpected end of JSON input$/.test(message)) return 'not valid JSON: it ends too early (a bracket, brace or quote not closed)';
  // a form not known here: it may quote the text, so only the verdict
  return 'not valid JSON';
}

function lineColumn(text: string, at: number): string {
  const before = text.slice(0, at);
  const line = before.split('\n').length;
  return `line ${line}, column ${at - before.lastIndexOf('\n')}`;
}

const lowerFirst = (s: string) => s.charAt(0).toLowerCase() + s.slice(1);

// The one base of every typed error in the agent, the CLI and the companion (livekit's LivekitError is the
// model): a machine-readable code and the underlying cause. Each subclass narrows the code's type and keeps its
// own name; the code strings stay what each wire format or exit-code table already documents.

export interface CodedErrorOptions {
  cause?: unknown;
}

export class CodedError<C extends string = string> extends Error {
  override name = 'CodedError';
  readonly code: C;

  constructor(code: C, message: string, opts: CodedErrorOptions = {}) {
    super(message, { cause: opts.cause });
    this.code = code;
  }
}

/** The first string `code` among an error and its causes (node puts a TLS or socket error's code on a cause: fetch's
 *  two levels down, an AgentError's one) that `accept` takes; undefined when none does. */
export function codeAmongCauses(err: unknown, accept: (code: string) => boolean): string | undefined {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && accept(code)) return code;
  }
  return undefined;
}

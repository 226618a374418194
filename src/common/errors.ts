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

import { ParamPairError, parseParamPairs } from "../graph/params.ts";

/** Where a command writes; tests pass buffers, the binary passes the process streams. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export const processIo: Io = {
  out: (text) => process.stdout.write(text.endsWith("\n") ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith("\n") ? text : `${text}\n`),
};

/** The exit codes (main.ts's EXIT_CODES says what each means). */
export const EXIT = { ok: 0, failed: 1, usage: 2, waiting: 3, interrupted: 130 } as const;

export class UsageError extends Error {
  override name = "UsageError";
}

/** Repeated `--param key=value` options (see graph/params.ts), a usage error when one is not key=value. */
export function parseParams(pairs: readonly string[]): Record<string, unknown> {
  try {
    return parseParamPairs(pairs);
  } catch (error) {
    if (error instanceof ParamPairError)
      throw new UsageError(`--param expects key=value, got '${error.pair}'`);
    throw error;
  }
}

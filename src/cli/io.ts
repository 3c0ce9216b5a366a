/** Where a command writes; tests pass buffers, the binary passes the process streams. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export const processIo: Io = {
  out: (text) => process.stdout.write(text.endsWith("\n") ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith("\n") ? text : `${text}\n`),
};

export class UsageError extends Error {
  override name = "UsageError";
}

/** Parses repeated `key=value` options; values are YAML scalars as cyberian reads them (`10` is a number). */
export function parseParams(
  pairs: readonly string[],
  parseValue: (raw: string) => unknown,
): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const pair of pairs) {
    const at = pair.indexOf("=");
    if (at <= 0) throw new UsageError(`--param expects key=value, got '${pair}'`);
    params[pair.slice(0, at).trim()] = parseValue(pair.slice(at + 1).trim());
  }
  return params;
}

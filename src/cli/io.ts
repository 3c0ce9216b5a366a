import { ParamPairError, parseParamPairs } from "../graph/params.ts";
import { nearestKey } from "../graph/schema-issues.ts";

/** Where a command writes; tests pass buffers, the binary passes the process streams. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export const processIo: Io = {
  out: (text) => process.stdout.write(text.endsWith("\n") ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith("\n") ? text : `${text}\n`),
};

/**
 * A reader that went away (a closed pipe: `agentrelay run ... | head -1`, a script that stopped
 * reading) ends nothing: what is left to print is dropped, and a runner goes on to the end of its run
 * instead of dying mid-run with its attempts left "running" (EPIPE would be an uncaught error).
 */
export function keepGoingWithoutReader(): void {
  for (const stream of [process.stdout, process.stderr])
    if (stream.listenerCount("error") === 0)
      stream.on("error", (error: NodeJS.ErrnoException) => {
        if (error.code !== "EPIPE" && error.code !== "ERR_STREAM_DESTROYED") throw error;
      });
}

/** The exit codes (main.ts's EXIT_CODES says what each means). */
export const EXIT = { ok: 0, failed: 1, usage: 2, waiting: 3, interrupted: 130 } as const;

/** The command line itself is wrong (exit code 2): an unknown command or option, a value of the wrong form. */
export class UsageError extends Error {
  override name = "UsageError";
}

/**
 * Well-formed input that does not fit what it names (exit code 1): a task the graph does not have,
 * a directory that is not a repository. Its message says what to do.
 */
export class InputError extends Error {
  override name = "InputError";
}

/** " (did you mean `x`?)" when one of `known` is near enough to `given` to be meant, else "". */
export function didYouMean(given: string, known: Iterable<string>): string {
  const near = nearestKey(given, [...known]);
  return near === null ? "" : ` (did you mean \`${near}\`?)`;
}

/**
 * `given` must be one of `known` (a task or workstream id the user typed): an InputError naming the
 * nearest, or the first few there are.
 */
export function checkKnown(what: string, given: string, known: readonly string[], where = ""): void {
  if (known.includes(given)) return;
  const hint = didYouMean(given, known);
  const some = known.length > 8 ? `${known.slice(0, 8).join(", ")}, ...` : known.join(", ");
  throw new InputError(`${where}no ${what} '${given}'${hint || ` (the graph has ${some})`}`);
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

/**
 * `--repo` values: the graph's own clone (DIR) and, for a graph that spans repositories, the clone of
 * each other repository it names (NAME=PATH).
 */
export function repoOptions(values: readonly string[]): {
  own: string | null;
  elsewhere: Record<string, string>;
} {
  let own: string | null = null;
  const elsewhere: Record<string, string> = {};
  for (const value of values) {
    const named = /^([A-Za-z0-9][A-Za-z0-9_.-]*)=(.+)$/.exec(value);
    if (!named) {
      if (own !== null)
        throw new UsageError(
          `--repo ${value}: the graph's own clone is ${own} already; give the other repositories' clones as --repo NAME=PATH`,
        );
      own = value;
    } else if (named[1]! in elsewhere) {
      throw new UsageError(`--repo ${value}: '${named[1]}' is given twice; give each repository one clone`);
    } else elsewhere[named[1]!] = named[2]!;
  }
  return { own, elsewhere };
}

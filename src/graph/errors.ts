/** One problem found in a graph file, located at the YAML node that caused it. */
export interface GraphIssue {
  file: string;
  /** 1-based line of the offending node. */
  line: number;
  /** 1-based column of the offending node. */
  column: number;
  /** Field path in agentrelay's notation, e.g. `tasks[2].review.agent`; empty for file-level problems. */
  path: string;
  message: string;
}

/**
 * Characters that would break an error's one line or hide what it says: line breaks and other
 * control characters, and the invisible and bidirectional-override marks that make text read
 * otherwise than it is (a "trojan source" id). Shown escaped, as `\n` or `\u{202e}`.
 */
const UNPRINTABLE =
  /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]/g;
const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** A run of this many characters without a space is shortened in messages (a 70,000-character id). */
const LONGEST_WORD = 200;

/**
 * `text` as a message shows it: every unprintable character escaped (one line, read as it is), and
 * any word longer than 200 characters shortened to its start and end, so that the rest still reads.
 */
export function printable(text: string): string {
  const escaped = text.replace(UNPRINTABLE, (c) => NAMED[c] ?? `\\u{${c.codePointAt(0)!.toString(16)}}`);
  return escaped.replace(
    new RegExp(`\\S{${LONGEST_WORD + 1},}`, "g"),
    (word) => `${word.slice(0, 120)}…[${word.length - 160} characters]…${word.slice(-40)}`,
  );
}

/** `FILE:LINE:COL: path: message`, always one line. */
export function formatIssue(issue: GraphIssue): string {
  const where = `${printable(issue.file)}:${issue.line}:${issue.column}`;
  const message = printable(issue.message);
  return issue.path ? `${where}: ${printable(issue.path)}: ${message}` : `${where}: ${message}`;
}

/** Thrown when a graph cannot be loaded; carries every issue found, in file order. */
export class GraphError extends Error {
  readonly issues: GraphIssue[];

  constructor(issues: GraphIssue[]) {
    const sorted = [...issues].sort((a, b) => a.line - b.line || a.column - b.column);
    super(sorted.map(formatIssue).join("\n"));
    this.name = "GraphError";
    this.issues = sorted;
  }
}

/** A path segment: a mapping key or a sequence index. */
export type PathSegment = string | number;

/** Renders a path the way agentrelay's messages do: `tasks[1].inputs_from[0].task`. */
export function formatPath(path: readonly PathSegment[]): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`;
    else out += out ? `.${segment}` : segment;
  }
  return out;
}

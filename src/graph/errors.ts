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

export function formatIssue(issue: GraphIssue): string {
  const where = `${issue.file}:${issue.line}:${issue.column}`;
  return issue.path ? `${where}: ${issue.path}: ${issue.message}` : `${where}: ${issue.message}`;
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

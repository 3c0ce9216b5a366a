/**
 * A NUL character in any string of a graph (a key or a value, either dialect, a file in canonical form
 * too) is refused where it is written: no process can take it as an argument or in its environment,
 * so a gate or a prompt holding one would pass `validate` and fail every attempt unlocated.
 */
import { GraphError, type GraphIssue, type PathSegment } from "./errors.ts";
import type { LoadedYaml } from "./yaml.ts";

/** At most this many NULs are named. */
const MAX_NAMED = 10;

const pathText = (path: readonly PathSegment[]): string =>
  path.map((s, i) => (typeof s === "number" ? `[${s}]` : i === 0 ? s : `.${s}`)).join("");

/** Each string of the loaded graph that holds a NUL, at its file, line and field. */
export function nulIssues(yaml: LoadedYaml): GraphIssue[] {
  const issues: GraphIssue[] = [];
  if (!yaml.mayHoldNul) return issues;
  const message = "may not contain a NUL character (no command, argument or environment can hold one)";
  const visit = (value: unknown, path: PathSegment[]): void => {
    if (issues.length >= MAX_NAMED) return;
    if (typeof value === "string") {
      if (value.includes("\0")) issues.push(yaml.issue(path, pathText(path), message));
    } else if (Array.isArray(value)) {
      value.forEach((item, i) => visit(item, [...path, i]));
    } else if (value !== null && typeof value === "object") {
      for (const [key, item] of Object.entries(value)) {
        if (key.includes("\0"))
          issues.push(yaml.issue([...path, key], pathText([...path, key]), message, "key"));
        visit(item, [...path, key]);
      }
    }
  };
  visit(yaml.value, []);
  return issues;
}

/** Throws a GraphError naming each string of the loaded graph that holds a NUL. */
export function refuseNul(yaml: LoadedYaml): void {
  const issues = nulIssues(yaml);
  if (issues.length > 0) throw new GraphError(issues);
}

/**
 * Runs `compile`, and refuses the NULs of `yaml` with whatever else it finds: each field's NUL stands
 * for that field's other complaints (an id with a NUL is not a safe id either), and the rest are kept.
 */
export function withNulRefused<T>(yaml: LoadedYaml, compile: () => T): T {
  const nul = nulIssues(yaml);
  let compiled: T;
  try {
    compiled = compile();
  } catch (error) {
    if (!(error instanceof GraphError) || nul.length === 0) throw error;
    const named = new Set(nul.map((issue) => issue.path));
    throw new GraphError([...nul, ...error.issues.filter((issue) => !named.has(issue.path))]);
  }
  if (nul.length > 0) throw new GraphError(nul);
  return compiled;
}

/**
 * zod's findings as located issues in agentrelay's wording: the real problem inside a union (a
 * mapping missing its `task`, not "must be a mapping or list of mappings"), and for an unknown key the
 * nearest valid one ("did you mean `dependencies`?"). The schemas are read through zod's public
 * properties (`type`, `shape`, `element`, `options`, `unwrap()`, `valueType`).
 */
import { closest, distance } from "fastest-levenshtein";
import { GraphError, type PathSegment } from "./errors.ts";
import type { Graph } from "./model.ts";
import { IssueList } from "./validate.ts";
import type { LoadedYaml } from "./yaml.ts";

/** Parse-level zod messages for schema nodes that do not set their own. */
export function defaultZodMessage(issue: {
  code?: string;
  expected?: string;
  input?: unknown;
}): string | undefined {
  if (issue.input === undefined) return "is required";
  if (issue.code === "invalid_type" && (issue.expected === "object" || issue.expected === "record"))
    return "must be a mapping";
  if (issue.code === "invalid_type" && issue.expected === "array") return "must be a list";
  return undefined;
}

interface ZodIssueLike {
  code: string;
  path: PropertyKey[];
  message: string;
  keys?: string[];
  errors?: ZodIssueLike[][];
}

/** What this module reads of a zod schema, all of it public API. */
interface SchemaLike {
  type: string;
  shape?: Record<string, SchemaLike>;
  element?: SchemaLike;
  options?: SchemaLike[];
  valueType?: SchemaLike;
  unwrap?: () => SchemaLike;
}

/** The object schemas a value at `path` can be checked against (several through a union). */
function objectsAt(schema: SchemaLike, path: readonly PathSegment[]): SchemaLike[] {
  let current = [schema];
  for (let i = 0; i <= path.length; i++) {
    const expanded: SchemaLike[] = [];
    const expand = (s: SchemaLike): void => {
      if (s.type === "optional" || s.type === "nullable" || s.type === "default") expand(s.unwrap!());
      else if (s.type === "union") s.options!.forEach(expand);
      else expanded.push(s);
    };
    current.forEach(expand);
    if (i === path.length) return expanded.filter((s) => s.type === "object");
    const segment = path[i]!;
    current = expanded.flatMap((s) => {
      if (s.type === "object" && typeof segment === "string" && s.shape![segment])
        return [s.shape![segment]!];
      if (s.type === "array" && typeof segment === "number") return [s.element!];
      if (s.type === "record" && typeof segment === "string") return [s.valueType!];
      return [];
    });
  }
  return [];
}

/** Two letters side by side swapped (`modle` for `model`): one slip, though two edits apart. */
function swapped(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  const at = [...a].flatMap((c, i) => (c === b[i] ? [] : [i]));
  return at.length === 2 && at[1] === at[0]! + 1 && a[at[0]!] === b[at[1]!] && a[at[1]!] === b[at[0]!];
}

/** What other task runners call a key of ours (Compose's `depends_on`, Actions' `needs`). */
const OTHER_NAMES: Record<string, string> = {
  depends_on: "dependencies",
  dependsOn: "dependencies",
  depends: "dependencies",
  deps: "dependencies",
  needs: "dependencies",
  after: "dependencies",
};

/** The valid key nearest to a mistyped one, if one is near enough to be meant. */
export function nearestKey(key: string, valid: readonly string[]): string | null {
  if (valid.length === 0) return null;
  const meant = Object.hasOwn(OTHER_NAMES, key) ? OTHER_NAMES[key]! : null;
  if (meant !== null && valid.includes(meant)) return meant;
  const near = closest(key, [...valid]);
  return distance(key, near) <= Math.max(1, Math.floor(key.length / 3)) || swapped(key, near) ? near : null;
}

/**
 * The issues of the union option that fits the value best: one whose own type matched (none of its
 * issues is at the union's own path), with the fewest issues; located from the root. None fits: null,
 * and the union's own message stands.
 */
function unionInner(issue: ZodIssueLike): ZodIssueLike[] | null {
  // zod gives an option's issues relative to the union.
  const fitting = (issue.errors ?? []).filter(
    (option) => option.length > 0 && option.every((inner) => inner.path.length > 0),
  );
  if (fitting.length === 0) return null;
  const best = fitting.reduce((a, b) => (b.length < a.length ? b : a));
  return best.map((inner) => ({ ...inner, path: [...issue.path, ...inner.path] }));
}

/** Adds zod issues, located at their nodes, in agentrelay's wording. */
export function addZodIssues(
  error: { issues: readonly ZodIssueLike[] },
  issues: IssueList,
  /** The schema that found them (a zod schema), for the keys an object takes. */
  root: unknown,
): void {
  const schema = root as SchemaLike;
  const hintsAt = (issue: ZodIssueLike) => {
    const valid = [
      ...new Set(objectsAt(schema, issue.path as PathSegment[]).flatMap((s) => Object.keys(s.shape!))),
    ];
    return [...(issue.keys ?? [])].sort().map((key) => [key, nearestKey(key, valid)] as const);
  };
  // A required key missing where a mistyped one stands (`taskz` for `tasks`) is said once, at the typo.
  const meant = new Set(
    error.issues
      .filter((issue) => issue.code === "unrecognized_keys")
      .flatMap((issue) => hintsAt(issue).map(([, hint]) => JSON.stringify([...issue.path, hint]))),
  );
  const add = (issue: ZodIssueLike) => {
    const path = issue.path as PathSegment[];
    if (issue.code === "unrecognized_keys" && issue.keys) {
      const hinted = hintsAt(issue).map(([key, hint]) => (hint ? `${key} (did you mean \`${hint}\`?)` : key));
      issues.add([...path, issue.keys[0]!], `contains unknown key(s): ${listed(hinted)}`, "key", path);
      return;
    }
    const inner = issue.code === "invalid_union" ? unionInner(issue) : null;
    if (inner) inner.forEach(add);
    else if (!(issue.message === "is required" && meant.has(JSON.stringify(path))))
      issues.add(path, issue.message);
  };
  error.issues.forEach(add);
}

/** Up to 20 names, then how many more: a file with thousands of unknown keys gets a readable line. */
function listed(names: readonly string[]): string {
  const shown = names.slice(0, 20).join(", ");
  return names.length > 20 ? `${shown} and ${names.length - 20} more` : shown;
}

/** A copy of `value` without the keys zod did not know, when those are all it found; else null. */
function withoutUnknownKeys(value: unknown, found: readonly ZodIssueLike[]): unknown {
  if (!found.every((issue) => issue.code === "unrecognized_keys")) return null;
  const copy = structuredClone(value);
  for (const issue of found) {
    let node = copy as Record<PropertyKey, unknown>;
    for (const segment of issue.path) node = node[segment] as Record<PropertyKey, unknown>;
    for (const key of issue.keys ?? []) delete node[key];
  }
  return copy;
}

interface SafeParser<T> {
  safeParse(
    value: unknown,
    params: { error: typeof defaultZodMessage },
  ): { success: true; data: T } | { success: false; error: { issues: readonly ZodIssueLike[] } };
}

/**
 * Parses a file with its dialect's schema and builds its graph, reporting every independent problem
 * in one pass: when the schema's only findings are unknown keys (a typo), which mean nothing, the rest
 * of the file is built and checked as well, so that a mistyped key does not hide an unknown dependency.
 */
export function parseAndBuild<T>(schema: SafeParser<T>, yaml: LoadedYaml, build: (file: T) => Graph): Graph {
  const parsed = schema.safeParse(yaml.value, { error: defaultZodMessage });
  if (parsed.success) return build(parsed.data);
  const issues = new IssueList(yaml);
  addZodIssues(parsed.error, issues, schema);
  const rest = withoutUnknownKeys(yaml.value, parsed.error.issues);
  const again = rest === null ? null : schema.safeParse(rest, { error: defaultZodMessage });
  if (again?.success) {
    try {
      build(again.data);
    } catch (error) {
      if (!(error instanceof GraphError)) throw error;
      issues.issues.push(...error.issues);
    }
  }
  throw new GraphError(issues.issues);
}

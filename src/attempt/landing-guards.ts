/**
 * What judges a landing is not the landing's to change. A repair is judged by the tests and the gate
 * commands of the tree it repairs: when it edits or deletes a test that was there, adds or changes a
 * test runner's configuration, or changes a file a gate command names (a script, `package.json`'s
 * scripts), its gates passing proves nothing, so it is not pushed: it goes to a person with the diff.
 * A resolution has to edit the conflicted files, tests included: each resolved test file keeps every
 * test either side had, no more of them skipped and no fewer assertions than either side; the other
 * judges it may not touch (see docs/runs.md, "What a repair may change").
 *
 * Which files are tests: the graph's `test_paths` (files or directories), else the usual names
 * (`test/`, `tests/`, `__tests__/`, `spec/`, `*.test.*`, `*.spec.*`, `test_*.py`, `*_test.py`, `*_test.go`).
 */
import { posix } from "node:path";
import type { Graph, Task } from "../graph/model.ts";
import type { CheckoutGit } from "./git.ts";
import { type Change, changesOf } from "./output-checks.ts";

/** What judges a tree: the commands its gates run, and where its tests are (null: the usual names). */
export interface Judges {
  gates: readonly string[];
  testPaths?: readonly string[] | null;
}

/** What judges a task's work: its completion gate, its workstream's and the graph's integration gates. */
export function judgesOfTask(graph: Graph, task: Task): Judges {
  const ws = graph.workstreams.find((w) => w.id === task.workstreamId);
  const gates = [task.completionGate, ws?.integrationGate, graph.settings.integrationGate];
  return { gates: gates.filter((g): g is string => !!g), testPaths: graph.settings.testPaths };
}

const TEST_DIR = /(^|\/)(test|tests|__tests__|spec|specs)\//;
const TEST_NAME = /(\.(test|spec)\.[cm]?[jt]sx?$)|((^|\/)test_[^/]*\.py$)|(_test\.(py|go)$)|(_spec\.rb$)/;
/** Files that decide what a test runner runs and what counts as passing. */
const RUNNER_CONFIG =
  /^((vitest|jest|vite|mocha|ava|karma|playwright|cypress)\.config\.[cm]?[jt]s(on)?|\.mocharc(\.[a-z]+)?|karma\.conf\.js|pytest\.ini|tox\.ini|setup\.cfg|conftest\.py|\.nycrc(\.[a-z]+)?|phpunit\.xml(\.dist)?)$/;
/** package.json's keys that decide what `npm test` and the runners do. */
const PACKAGE_KEYS = ["scripts", "jest", "mocha", "ava", "vitest"];

const under = (paths: readonly string[], path: string) =>
  paths.some((p) => {
    const dir = p.replace(/^\.\//, "").replace(/\/+$/, "");
    return path === dir || path.startsWith(`${dir}/`);
  });

/** Whether `path` is a test file of the tree. */
export function isTest(path: string, testPaths?: readonly string[] | null): boolean {
  return testPaths?.length ? under(testPaths, path) : TEST_DIR.test(path) || TEST_NAME.test(path);
}

export const isRunnerConfig = (path: string): boolean => RUNNER_CONFIG.test(posix.basename(path));

/**
 * The repository's programs a gate command runs: a script it names (`./check.sh`, `node
 * scripts/run-tests.js`, `bash ci/test`), the Makefile of `make`, the package.json of `npm test`. A
 * data file it reads (`test -s out.txt`) is not one.
 */
export function gateFiles(gates: readonly string[]): Set<string> {
  const files = new Set<string>();
  for (const command of gates) {
    for (const segment of command.split(/&&|\|\||[;|()\n]/)) {
      const words = segment
        .trim()
        .split(/\s+/)
        .map((w) => w.replace(/^['"]|['"]$/g, ""));
      words.forEach((word, i) => {
        if (word === "make") ["Makefile", "makefile", "GNUmakefile"].forEach((f) => files.add(f));
        if (/^(npm|yarn|pnpm|bun)$/.test(word)) files.add("package.json");
        if (!word || word.startsWith("-") || word.includes("$") || word.startsWith("/")) return;
        const path = posix.normalize(word.replace(/^\.\//, ""));
        if (SCRIPT.test(word) || (i === 0 && word.includes("/"))) files.add(path);
      });
    }
  }
  return files;
}

/** A program by its name: what a gate names with one of these runs, rather than being read. */
const SCRIPT = /\.(sh|bash|zsh|[cm]?js|[cm]?ts|py|rb|pl|php)$/;

const PACKAGE_JSON = /(^|\/)package\.json$/;

/** What of a package.json judges the tests (its scripts, the runners' settings), comparable as text. */
function packageJudges(text: string | null | undefined): string {
  try {
    const json = JSON.parse(text ?? "{}") as Record<string, unknown>;
    return JSON.stringify(PACKAGE_KEYS.map((k) => json[k] ?? null));
  } catch {
    return "(not JSON)";
  }
}

/** Reads blobs by id (null for an absent one). */
async function read(checkout: CheckoutGit, ids: string[]): Promise<(string | null)[]> {
  const wanted = ids.filter((id) => !/^0+$/.test(id));
  const texts = new Map<string, string | null>();
  let i = 0;
  for await (const blob of checkout.blobs(wanted))
    texts.set(wanted[i++]!, blob ? blob.toString("utf8") : null);
  return ids.map((id) => texts.get(id) ?? null);
}

/** A change as a person reads it: "deleted test/math.test.js". */
const said = (c: Change, what: string) =>
  `${c.status === "D" ? "deleted" : c.status === "A" ? "added" : "changed"} ${what} ${c.path}`;

/**
 * What a repair (or a task agent held to `protect_tests`) did to the judges of the tree, `from` (the
 * tree before it) to `to` (what it would commit): one line per file, empty when it left them alone.
 */
export async function weakenedJudges(
  checkout: CheckoutGit,
  from: string,
  to: string,
  judges: Judges,
): Promise<string[]> {
  const named = gateFiles(judges.gates);
  const found: string[] = [];
  for (const change of await changesOf(checkout, [from, to])) {
    const { path, status } = change;
    if (PACKAGE_JSON.test(path)) {
      const [before, after] = await read(checkout, [change.oldId, change.newId]);
      if (packageJudges(before) !== packageJudges(after)) found.push(`${said(change, "the scripts of")}`);
    } else if (named.has(path)) found.push(said(change, "the gate's file"));
    else if (isRunnerConfig(path)) found.push(said(change, "the test runner's configuration"));
    else if (status !== "A" && isTest(path, judges.testPaths)) found.push(said(change, "the test"));
  }
  return found;
}

/** The names of the tests a file declares (`it("...")`, `test("...")`, `def test_x`, `func TestX`). */
export function testNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/\b(?:it|test|describe)(?:\.\w+)*\s*\(\s*(['"`])(.*?)\1/g)) names.add(m[2]!);
  for (const m of text.matchAll(/^\s*(?:async\s+)?def\s+(test_\w+)|^func\s+(Test\w+)/gm))
    names.add((m[1] ?? m[2])!);
  return names;
}

const SKIPS =
  /\b(?:it|test|describe)\.(?:skip|todo|only)\b|\bx(?:it|describe|test)\s*\(|@pytest\.mark\.(?:skip|xfail)|@unittest\.skip|\bt\.Skip(?:Now)?\(|\bpytest\.skip\(/g;
const ASSERTS = /\b(?:expect|assert\w*)\s*[.(]|\bt\.(?:Error|Errorf|Fatal|Fatalf)\(/g;
const counted = (text: string, pattern: RegExp) => text.match(pattern)?.length ?? 0;

/**
 * Whether a resolved test file keeps what each side asserted: every test either side declares, no
 * more skipped than either side, and as many assertions as the base had plus what each side added.
 * The lines that say what it lost (empty when it lost nothing).
 */
export function keepsBothSides(
  path: string,
  ours: string | null | undefined,
  theirs: string | null | undefined,
  result: string | null | undefined,
  base?: string | null,
): string[] {
  if (result == null) return [`deleted the test ${path}, which a side kept`];
  const sides = [ours, theirs].filter((s): s is string => s != null);
  const kept = testNames(result);
  const lost = [...new Set(sides.flatMap((s) => [...testNames(s)]))].filter((n) => !kept.has(n));
  const found: string[] = [];
  if (lost.length) found.push(`dropped ${lost.map((n) => `"${n}"`).join(", ")} from the test ${path}`);
  if (counted(result, SKIPS) > Math.max(0, ...sides.map((s) => counted(s, SKIPS))))
    found.push(`skipped more of the test ${path} than either side`);
  const asserts = sides.map((s) => counted(s, ASSERTS));
  const wanted = Math.max(
    ...asserts,
    base != null ? asserts.reduce((a, b) => a + b, 0) - counted(base, ASSERTS) * (sides.length - 1) : 0,
  );
  if (counted(result, ASSERTS) < wanted)
    found.push(`left fewer assertions in the test ${path} than the two sides have together`);
  return found;
}

/**
 * What a resolution did to the judges, with the merge in progress and its result staged: a conflicted
 * test file must keep both sides (keepsBothSides); a conflicted gate file or runner configuration must
 * be one side's exactly, and a package.json's scripts one side's.
 */
export async function resolutionWeakens(
  checkout: CheckoutGit,
  files: readonly string[],
  judges: Judges,
): Promise<string[]> {
  const named = gateFiles(judges.gates);
  const found: string[] = [];
  const id = async (rev: string, path: string) => {
    const r = await checkout.raw(["rev-parse", "-q", "--verify", `${rev}:${path}`]);
    return r.code === 0 ? r.stdout.trim() : "0";
  };
  const mergeBase = (await checkout.raw(["merge-base", "HEAD", "MERGE_HEAD"])).stdout.trim() || "HEAD";
  for (const path of files) {
    // A test file the gate runs by name is still a test: it keeps both sides' assertions.
    const test = isTest(path, judges.testPaths);
    const judged = !test && (PACKAGE_JSON.test(path) || named.has(path) || isRunnerConfig(path));
    if (!judged && !test) continue;
    const [ours, theirs, result, base] = await read(checkout, [
      await id("HEAD", path),
      await id("MERGE_HEAD", path),
      await id("", path),
      await id(mergeBase, path),
    ]);
    if (PACKAGE_JSON.test(path)) {
      if (![ours, theirs].map(packageJudges).includes(packageJudges(result)))
        found.push(`changed the scripts of ${path} to what neither side had`);
    } else if (judged) {
      if (result !== ours && result !== theirs)
        found.push(`changed the gate's file ${path} to what neither side had`);
    } else found.push(...keepsBothSides(path, ours, theirs, result, base));
  }
  return found;
}

/** The diff a person is shown with what a landing did to its judges: the files named, cut to `max`. */
export const judgesDiff = (checkout: CheckoutGit, from: string, to: string, max = 1_800): Promise<string> =>
  diffCut(checkout, [from, to], max);

/** `git diff` of `revisions` (stat and patch, no external drivers), cut to `max` characters. */
export async function diffCut(checkout: CheckoutGit, revisions: string[], max: number): Promise<string> {
  const diff = await checkout.git([
    "diff",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--stat",
    "-p",
    ...revisions,
  ]);
  return diff.length > max ? `${diff.slice(0, max)}\n[... ${diff.length - max} characters cut ...]` : diff;
}

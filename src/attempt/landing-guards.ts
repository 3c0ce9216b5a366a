/**
 * What judges a landing is not the landing's to change. A repair is judged by the tests and the gate
 * commands of the tree it repairs; when it changed them, its gates passing proves nothing, so it is not
 * pushed: it goes to a person with the diff (see docs/runs.md, "What a repair may change"):
 * - where the two sides meet is the repair's ground: it may change only files on which the branch and
 *   its target differ, and add files. Whatever the two sides agree on (the test runner, its setup files,
 *   the scripts a script calls, pyproject.toml, conftest.py, a Makefile, a test neither touched: any
 *   file, whatever its name) was verified on both and is not the repair's to change;
 * - of the files a side changed, the judges by name and by what names them (judge-files.ts): a test
 *   that was there, a runner's configuration, a gate's program and what it calls, package.json's
 *   scripts, pyproject.toml's runner tables;
 * - and in any file it changes, no more skips, no fewer assertions, no new `catch` around them.
 * A resolution has to edit the conflicted files, tests included: each resolved test file keeps every
 * test either side had, no more of them skipped and no fewer assertions than either side; a conflicted
 * judge is one side's exactly; anything else its agent changed is put back (resolve.ts).
 */
import type { Graph, Task } from "../graph/model.ts";
import type { CheckoutGit } from "./git.ts";
import {
  type Judges,
  isRunnerConfig,
  isTest,
  judgedPart,
  judgeFilesOf,
  readBlobs as read,
} from "./judge-files.ts";
import { type Change, changesOf } from "./output-checks.ts";

export { gateFiles, isRunnerConfig, isTest, type Judges } from "./judge-files.ts";

/** What judges a task's work: its completion gate, its workstream's and the graph's integration gates. */
export function judgesOfTask(graph: Graph, task: Task): Judges {
  const ws = graph.workstreams.find((w) => w.id === task.workstreamId);
  const gates = [task.completionGate, ws?.integrationGate, graph.settings.integrationGate];
  return { gates: gates.filter((g): g is string => !!g), testPaths: graph.settings.testPaths };
}

/** A change's verb as a person reads it: "deleted". */
const said = (c: Change) => (c.status === "D" ? "deleted" : c.status === "A" ? "added" : "changed");
const PACKAGE = /(^|\/)package\.json$/;

/**
 * What a repair (or a task agent held to `protect_tests`) did to the judges of the tree, `from` (the
 * tree before it) to `to` (what it would commit): one line per file, empty when it left them alone.
 * With `sides` (a repair: the branch before the merge and the target), a file on which the two agree
 * is not the repair's to change at all, and no file it changes may lose assertions or gain skips.
 */
export async function weakenedJudges(
  checkout: CheckoutGit,
  from: string,
  to: string,
  judges: Judges,
  sides?: readonly [string, string],
): Promise<string[]> {
  const judgeFiles = new Set([
    ...(await judgeFilesOf(checkout, from, judges)),
    ...(await judgeFilesOf(checkout, to, judges)),
  ]);
  const differ = sides && new Set(await pathsDiffering(checkout, sides));
  const found: string[] = [];
  for (const change of await changesOf(checkout, [from, to])) {
    const { path, status } = change;
    const [before, after] =
      judgeFiles.has(path) || differ ? await read(checkout, [change.oldId, change.newId]) : [null, null];
    const part = judgedPart(path, before);
    if (differ && status !== "A" && !differ.has(path))
      found.push(`${said(change)} ${path}, which neither side changed`);
    else if (part !== null) {
      if (part !== judgedPart(path, after))
        found.push(
          `${said(change)} the ${PACKAGE.test(path) ? "scripts" : "test runner's tables"} of ${path}`,
        );
    } else if (judgeFiles.has(path))
      found.push(
        `${said(change)} the ${isRunnerConfig(path) ? "test runner's configuration" : "gate's file"} ${path}`,
      );
    else if (status !== "A" && isTest(path, judges.testPaths)) found.push(`${said(change)} the test ${path}`);
    else if (differ && status !== "A") found.push(...weakerText(path, before, after));
  }
  return found;
}

/** The files on which two commits differ: where their changes since they parted meet. */
async function pathsDiffering(checkout: CheckoutGit, [ours, theirs]: readonly [string, string]) {
  return (await checkout.git(["diff", "--name-only", "-z", "--no-renames", ours, theirs]))
    .split("\0")
    .filter(Boolean);
}

/**
 * What a change to any file did to the checks in it, whatever the file is called: more skips, fewer
 * assertions, or a new `catch` in a file that asserts (a test body wrapped so that it cannot fail).
 */
function weakerText(path: string, before?: string | null, after?: string | null): string[] {
  const was = before ?? "";
  const is = after ?? "";
  const found: string[] = [];
  if (counted(is, SKIPS) > counted(was, SKIPS)) found.push(`skipped checks in ${path}`);
  if (counted(is, ASSERTS) < counted(was, ASSERTS))
    found.push(`${after == null ? "deleted" : "took assertions out of"} ${path}`);
  else if (counted(was, ASSERTS) > 0 && counted(is, CATCHES) > counted(was, CATCHES))
    found.push(`caught what the assertions of ${path} throw`);
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
/** An assertion in any of the usual forms (node's assert, expect, Python's statement, Go's t.Fatal, Rust's macros). */
const ASSERTS =
  /\b(?:expect|assert\w*!?)\s*[.(]|\.(?:(?:not)?(?:strict|deep|deepStrict)?[Ee]qual|ok|throws|rejects|match|fail)\(|^\s*assert\s|\bt\.(?:Error|Errorf|Fatal|Fatalf)\(/gm;
const CATCHES = /\bcatch\b|\bexcept\b|\brecover\(\)/g;
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
  // The judges either side has, by name and by what names them (a setup file, a script a script calls).
  const judgeFiles = new Set([
    ...(await judgeFilesOf(checkout, "HEAD", judges)),
    ...(await judgeFilesOf(checkout, "MERGE_HEAD", judges)),
  ]);
  const found: string[] = [];
  const id = async (rev: string, path: string) => {
    const r = await checkout.raw(["rev-parse", "-q", "--verify", `${rev}:${path}`]);
    return r.code === 0 ? r.stdout.trim() : "0";
  };
  const mergeBase = (await checkout.raw(["merge-base", "HEAD", "MERGE_HEAD"])).stdout.trim() || "HEAD";
  for (const path of files) {
    const [ours, theirs, result, base] = await read(checkout, [
      await id("HEAD", path),
      await id("MERGE_HEAD", path),
      await id("", path),
      await id(mergeBase, path),
    ]);
    const part = (text?: string | null) => judgedPart(path, text);
    // A test file the gate runs by name is still a test: it keeps both sides' assertions.
    if (isTest(path, judges.testPaths)) found.push(...keepsBothSides(path, ours, theirs, result, base));
    else if (part(result) !== null) {
      if (![ours, theirs].map(part).includes(part(result)))
        found.push(
          `changed the ${PACKAGE.test(path) ? "scripts" : "test runner's tables"} of ${path} to what neither side had`,
        );
    } else if (judgeFiles.has(path)) {
      if (result !== ours && result !== theirs)
        found.push(`changed the gate's file ${path} to what neither side had`);
    } else if ([ours, theirs].every((side) => weakerText(path, side, result).length > 0))
      // Any other file (a test by no usual name): weaker than both sides in its checks.
      found.push(...weakerText(path, ours, result));
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

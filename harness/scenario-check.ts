/**
 * The independent check of what a scenario's run left on its target. It trusts nothing the run wrote:
 * each tree the target took is exported and checked with the scenario's own pristine files (its test
 * runner, say) laid over it; and the test files the base and the workstreams' tasks wrote, replayed
 * from the scenario itself in a scratch repository (not read from any branch of the run), must each
 * still be on the target and pass there as their writers wrote them.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { git, gitRaw } from "../src/attempt/git.ts";
import type { RunState } from "../src/engine/types.ts";
import type { Scenario } from "./scenario-file.ts";

type Expectation = NonNullable<Scenario["expect"]>;

/** How long one check command may take: a hang is a failure, not a wait. */
const CHECK_MS = 60_000;

const run = (command: string, cwd: string) =>
  spawnSync("bash", ["-c", command], { cwd, stdio: "ignore", timeout: CHECK_MS }).status === 0;

function writeAll(dir: string, files: Record<string, string | null>): void {
  for (const [path, text] of Object.entries(files)) {
    const full = join(dir, path);
    if (text === null) rmSync(full, { force: true });
    else {
      mkdirSync(dirname(full), { recursive: true });
      writeFileSync(full, text);
    }
  }
}

function readAll(dir: string): Record<string, string> {
  const found: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const full = join(entry.parentPath, entry.name);
    if (entry.isFile() && !relative(dir, full).startsWith(".git/"))
      found[relative(dir, full)] = readFileSync(full, "utf8");
  }
  return found;
}

const testPrefixes = (s: Scenario) => s.check.tests ?? ["tests/"];
const isTest = (s: Scenario, path: string) => testPrefixes(s).some((p) => path.startsWith(p));

/**
 * The test files each workstream's line holds once its tasks are done, by workstream (its tasks
 * replayed in order on a copy of the base, each command as its agent runs it), and the base's own
 * (under `""`). A test a workstream rewrote is held to its rewrite: the base's version is superseded.
 */
export async function pristineTests(s: Scenario): Promise<Map<string, Record<string, string>>> {
  const tests = (files: Record<string, string>) =>
    Object.fromEntries(Object.entries(files).filter(([path]) => isTest(s, path)));
  const lines = new Map<string, Record<string, string>>([["", tests(s.files)]]);
  for (const w of s.workstreams) {
    const dir = mkdtempSync(join(tmpdir(), `scenario-${s.name}-`));
    try {
      writeAll(dir, s.files);
      await git(dir, ["init", "-q", "-b", "main"]);
      await git(dir, ["add", "--all"]);
      await git(dir, ["-c", "user.name=s", "-c", "user.email=s@example.com", "commit", "-qm", "base"]);
      for (const t of w.tasks) run(`set -e\n${t.agent}`, dir);
      lines.set(w.id, tests(readAll(dir)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return lines;
}

/** A commit's tree in a temporary directory, with `over` laid on it; removed after `work`. */
async function withTree<T>(
  repo: string,
  commit: string,
  over: Record<string, string>,
  work: (dir: string) => T,
) {
  const dir = mkdtempSync(join(tmpdir(), "scenario-tree-"));
  try {
    const archive = spawnSync("git", ["-C", repo, "archive", "--format=tar", commit], { maxBuffer: 1 << 28 });
    if (archive.status !== 0) throw new Error(`git archive ${commit} failed: ${archive.stderr.toString()}`);
    spawnSync("tar", ["-x", "-C", dir], { input: archive.stdout });
    writeAll(dir, over);
    return work(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The scenario's files that the check puts back as written before it runs (the pristine runner). */
const pristineFiles = (s: Scenario) =>
  Object.fromEntries((s.check.files ?? []).flatMap((p) => (p in s.files ? [[p, s.files[p]!]] : [])));

/**
 * The trees of the target's history since `since` (first parent: one per landing) that fail the
 * scenario's check, each `sha subject`.
 */
export async function brokenTrees(
  s: Scenario,
  repo: string,
  since: string,
  target = "main",
): Promise<string[]> {
  const commits = (await git(repo, ["rev-list", "--first-parent", "--reverse", `${since}..${target}`]))
    .split("\n")
    .filter(Boolean);
  const broken: string[] = [];
  for (const commit of commits)
    if (!(await withTree(repo, commit, pristineFiles(s), (dir) => run(s.check.command ?? s.gate, dir))))
      broken.push(`${commit.slice(0, 7)} ${await git(repo, ["log", "-1", "--format=%s", commit])}`);
  return broken;
}

/**
 * The test files the base and the workstreams that landed wrote (`landed`: their ids) that are gone
 * from the target's tip (unless a person removed them: the scenario's `check.removed`, or a hook's
 * push), or that were changed there and fail as their writers wrote them (run one at a time with the
 * pristine files laid over the tree). A test kept as written that fails is a broken tree, not a weakened one.
 */
export async function weakenedTests(
  s: Scenario,
  repo: string,
  pristine: Map<string, Record<string, string>>,
  landed: string[],
  target = "main",
): Promise<string[]> {
  const removedByPeople = new Set([
    ...(s.check.removed ?? []),
    ...(s.hooks ?? []).flatMap((h) => Object.entries(h.push).flatMap(([p, t]) => (t === null ? [p] : []))),
  ]);
  const base = pristine.get("") ?? {};
  // Each path's versions: those of the workstreams that landed, the base's where none rewrote it.
  const versions = new Map<string, Set<string>>();
  for (const id of landed)
    for (const [path, text] of Object.entries(pristine.get(id) ?? {}))
      if (base[path] !== text) versions.set(path, (versions.get(path) ?? new Set()).add(text));
  for (const [path, text] of Object.entries(base))
    if (!versions.has(path)) versions.set(path, new Set([text]));
  const command = s.check.test_command ?? "node {file}";
  const weakened: string[] = [];
  for (const [path, texts] of [...versions].sort(([a], [b]) => a.localeCompare(b))) {
    const now = await gitRaw(repo, ["show", `${target}:${path}`]);
    if (now.code !== 0) {
      if (!removedByPeople.has(path)) weakened.push(`${path} is gone`);
      continue;
    }
    if (texts.has(now.stdout)) continue;
    for (const text of texts) {
      const ok = await withTree(repo, target, { ...pristineFiles(s), [path]: text }, (dir) =>
        run(command.replaceAll("{file}", `'${path.replace(/'/g, "'\\''")}'`), dir),
      );
      if (!ok) {
        weakened.push(`${path} was changed and fails as written`);
        break;
      }
    }
  }
  return weakened;
}

/** What a finished run says of itself, for the bench's columns and a scenario's `expect`. */
export interface RunSummary {
  outcome: "succeeded" | "failed" | "waiting" | "cancelled";
  toPerson: number;
  repairs: number;
  repairsFixed: number;
  verifications: number;
  /** Gates found flaky (failed, then passed on the same tree). */
  flaky: number;
  /** Gates stopped as timed out. */
  timedOut: number;
  /** Dollars the run's agents spent. */
  costUsd: number;
  /** Why each waiting integration PR waits. */
  waiting: string[];
}

export function summarize(state: RunState): RunSummary {
  const workstreams = Object.entries(state.workstreams);
  const repairs = workstreams.flatMap(([, w]) => w.verification?.repairs ?? []);
  const waiting = workstreams.filter(([, w]) => w.status === "pr_open");
  // One entry per gate verdict (a verification or a repair that passed on a rerun; a gate stopped).
  const verdicts = (types: string[], pattern: RegExp) =>
    new Set(
      state.timeline
        // "not verified: …" repeats, for the person, a verdict already counted.
        .filter(
          (e) =>
            types.includes(e.type) && pattern.test(e.detail ?? "") && !/^not verified:/.test(e.detail ?? ""),
        )
        .map((e) => `${e.type} ${e.workstream ?? ""} ${e.task ?? ""} ${e.attempt ?? ""}`),
    ).size;
  // Every record's spend (attempts, resolutions, verifications, repairs): the budget's sum exists only
  // where a budget applies.
  let spent = 0;
  JSON.stringify({ tasks: state.tasks, workstreams: state.workstreams }, (key, value: unknown) => {
    if (key === "costMicros" && typeof value === "number") spent += value;
    return value;
  });
  return {
    outcome:
      state.outcome === null
        ? "waiting"
        : state.outcome === "completed_with_failures"
          ? "failed"
          : state.outcome,
    toPerson: workstreams.filter(([, w]) => w.verification?.toPerson || w.status === "pr_open").length,
    repairs: repairs.length,
    repairsFixed: repairs.filter((r) => r.outcome === "succeeded").length,
    verifications: workstreams.reduce((n, [, w]) => n + (w.verification?.runs.length ?? 0), 0),
    flaky: verdicts(["verified", "task_succeeded"], /flaky/),
    timedOut: verdicts(
      ["verification_failed", "repair_failed", "resolution_failed", "task_failed"],
      /timed out/,
    ),
    costUsd: spent / 1e6,
    waiting: waiting.map(([id, w]) => `${state.graph}/${id}: ${w.reason ?? ""}`),
  };
}

/**
 * What of the scenario's `expect` the run did not show, one line each (empty: all of it). Nothing
 * broken and nothing weakened on the target is expected unless `expect.broken` says otherwise.
 */
export function unmet(
  s: Scenario,
  summary: RunSummary,
  found: { broken: string[]; weakened: string[]; planNote: string | null },
): string[] {
  const { or, ...e } = s.expect ?? {};
  const misses: string[] = [];
  if (found.broken.length !== (e.broken ?? 0))
    misses.push(`${found.broken.length} broken trees on the target, not ${e.broken ?? 0}`);
  if (found.weakened.length > 0) misses.push(`weakened on the target: ${found.weakened.join(", ")}`);
  const missed = unmetOutcome(e, summary, found.planNote);
  if (missed.length > 0 && or && unmetOutcome(or, summary, found.planNote).length === 0) return misses;
  return [...misses, ...missed];
}

/** What of one expected outcome (how the run ended, who it waits for, what it said) the run did not show. */
function unmetOutcome(e: Omit<Expectation, "or">, summary: RunSummary, planNote: string | null): string[] {
  const misses: string[] = [];
  if (e.plan && !new RegExp(e.plan).test(planNote ?? ""))
    misses.push(`the plan says ${JSON.stringify(planNote)}, which does not match /${e.plan}/`);
  if (e.flaky !== undefined && summary.flaky < e.flaky)
    misses.push(`${summary.flaky} flaky gates, not ${e.flaky} or more`);
  if (e.timed_out !== undefined && summary.timedOut < e.timed_out)
    misses.push(`${summary.timedOut} gates timed out, not ${e.timed_out} or more`);
  if (e.outcome && summary.outcome !== e.outcome) misses.push(`ended ${summary.outcome}, not ${e.outcome}`);
  if (e.to_person !== undefined && summary.toPerson !== e.to_person)
    misses.push(`${summary.toPerson} waiting for a person, not ${e.to_person}`);
  if (e.repairs !== undefined && summary.repairs !== e.repairs)
    misses.push(`${summary.repairs} repairs, not ${e.repairs}`);
  if (e.reason && !summary.waiting.some((w) => new RegExp(e.reason!).test(w)))
    misses.push(`no waiting reason matches /${e.reason}/`);
  return misses;
}

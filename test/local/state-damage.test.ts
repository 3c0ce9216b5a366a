/**
 * A local run's state, damaged in each way we have seen (bad JSON, null, an array, wrong types, a
 * `__proto__` wrapper, a missing bucket, a bad index, zero buckets, a missing run.json, an oversized
 * bucket, an emptied bucket, another run's key): `status` and `run` exit within seconds with one line naming the part, the run and the
 * command that restores its last good version; nothing is changed, nothing lost, and once restored
 * the run reads whole again. Two kinds go through the real binary (its exit, its stderr); the others
 * ask the same commands in this process (`main`, as the binary calls it), which say the same line.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catFiles, git } from "../../src/attempt/git.ts";
import { createEngine } from "../../src/engine/engine.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { GitRefStateStore, stateRef } from "../../src/local/git-store.ts";
import { main } from "../../src/cli/main.ts";
import { MAX_PART_BYTES } from "../../src/protocol/state-check.ts";
import { BIN } from "../support/cli.ts";
import { tempRepo } from "../support/git.ts";
import { WAIT_MS } from "../../harness/patience.ts";

const REF = stateRef("g/1");
/** 40 tasks: two buckets of the state layout (32 tasks each at most). */
const GRAPH = `name: g\ntasks:\n${Array.from({ length: 40 }, (_, i) => `  - id: t${i}\n    description: task ${i}\n`).join("")}`;

let repo: string;
let file: string;
let good: string;
/** The directories this file made, removed at its end. */
const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/**
 * A new version of the run's ref whose files `change` rewrote (null: removed): its files read with one
 * `cat-file --batch`, written with one `hash-object` and one `update-index`, so that each kind costs a
 * few git processes, not three a file.
 */
async function damage(change: (files: Map<string, string | null>) => void): Promise<string> {
  await git(repo, ["update-ref", REF, good]);
  const paths = (await git(repo, ["ls-tree", "-r", "--name-only", good])).split("\n");
  const texts = await catFiles(
    repo,
    paths.map((path) => `${good}:${path}`),
  );
  const files = new Map<string, string | null>(paths.map((path, i) => [path, texts[i]!.trim()]));
  change(files);
  const dir = mkdtempSync(join(tmpdir(), "agentrelay-damage-"));
  made.push(dir);
  const kept = [...files].filter((entry): entry is [string, string] => entry[1] !== null);
  const blobs = kept.map(([, text], i) => {
    const blob = join(dir, `blob-${i}`);
    writeFileSync(blob, text);
    return blob;
  });
  const ids = (
    await git(repo, ["hash-object", "-w", "--no-filters", "--stdin-paths"], `${blobs.join("\n")}\n`)
  ).split("\n");
  const index = { GIT_INDEX_FILE: join(dir, "index") };
  const entries = kept.map(([path], i) => `100644 ${ids[i]}\t${path}\n`).join("");
  await git(repo, ["update-index", "--add", "--index-info"], entries, index);
  const tree = await git(repo, ["write-tree"], undefined, index);
  const commit = await git(repo, ["commit-tree", tree, "-p", good, "-m", "damage"]);
  await git(repo, ["update-ref", REF, commit]);
  return commit;
}

const agentrelay = (...args: string[]) => {
  const result = spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8", timeout: WAIT_MS });
  return {
    code: result.status,
    stderr: result.stderr,
    stdout: result.stdout,
    timedOut: result.error !== undefined,
  };
};

/** The same command asked in this process: what the binary would print, and its exit code. */
const inProcess = async (...args: string[]) => {
  let stdout = "";
  let stderr = "";
  const line = (text: string) => (text.endsWith("\n") ? text : `${text}\n`);
  const code = await main(args, { out: (t) => (stdout += line(t)), err: (t) => (stderr += line(t)) });
  return { code, stderr, stdout, timedOut: false };
};

/** The kinds asked of the real binary: its exit within seconds, its one line on stderr. */
const THROUGH_THE_BINARY = new Set(["bad JSON", "five million buckets (security case 75)"]);

const edit =
  (path: string, f: (value: Record<string, unknown>) => unknown) => (files: Map<string, string | null>) =>
    files.set(path, JSON.stringify(f(JSON.parse(files.get(path)!) as Record<string, unknown>)));

const KINDS: [string, string, (files: Map<string, string | null>) => void, RegExp][] = [
  ["bad JSON", "tasks/001.json", (f) => f.set("tasks/001.json", '{"tasks": {'), /is not JSON/],
  ["null", "tasks/000.json", (f) => f.set("tasks/000.json", "null"), /is not a JSON object \(it is null\)/],
  [
    "an array",
    "run.json",
    (f) => f.set("run.json", '{"$layout":{"version":2,"buckets":2},"x":[]}'.replace('"x":[]', '"runKey":[]')),
    /has a wrong value at/,
  ],
  [
    "wrong types",
    "tasks/000.json",
    edit("tasks/000.json", (v) => {
      const tasks = v.tasks as Record<string, Record<string, unknown>>;
      tasks[Object.keys(tasks)[0]!]!.status = 5;
      return v;
    }),
    /has a wrong value at tasks\.t\d+\.status/,
  ],
  [
    "a __proto__ wrapper",
    "tasks/001.json",
    (f) =>
      f.set("tasks/001.json", f.get("tasks/001.json")!.replace('"tasks":{', '"tasks":{"__proto__":{"x":1},')),
    /has a key __proto__ in tasks/,
  ],
  ["a missing bucket", "tasks/001.json", (f) => f.set("tasks/001.json", null), /is missing/],
  [
    "a bad index",
    "run.json",
    (f) => f.set("run.json", f.get("run.json")!.replace('"$layout"', '"$lay"')),
    /does not start with its layout/,
  ],
  [
    "zero buckets",
    "run.json",
    (f) => f.set("run.json", f.get("run.json")!.replace('"buckets":2', '"buckets":0')),
    /says the run has no task buckets/,
  ],
  [
    "five million buckets (security case 75)",
    "run.json",
    (f) => f.set("run.json", f.get("run.json")!.replace('"buckets":2', '"buckets":5000000')),
    /says the run has 5000000 task buckets, more than a graph of 20000 tasks has \(625\)/,
  ],
  ["a missing run.json", "run.json", (f) => f.set("run.json", null), /is missing/],
  [
    "an emptied bucket",
    "tasks/001.json",
    (f) => f.set("tasks/001.json", "{}"),
    /has no record of task 't\d+'/,
  ],
  [
    "another run's key",
    "run.json",
    edit("run.json", (v) => ({ ...v, runKey: "g/7", runNumber: 7 })),
    /names run 'g\/7' \(graph 'g', number 7\), not g\/1, whose place it holds/,
  ],
  [
    "an oversized bucket",
    "tasks/000.json",
    (f) => f.set("tasks/000.json", " ".repeat(MAX_PART_BYTES + 1)),
    /is larger than/,
  ],
];

beforeAll(async () => {
  repo = await tempRepo();
  file = join(mkdtempSync(join(tmpdir(), "agentrelay-graph-")), "g.yaml");
  made.push(repo, dirname(file));
  writeFileSync(file, GRAPH);
  const { state } = createEngine(parseGraph(file, GRAPH)).start(Date.now());
  good = (await new GitRefStateStore(repo).compareAndSwap("g/1", null, state))!;
  expect(await git(repo, ["ls-tree", "-r", "--name-only", good])).toBe(
    "run.json\ntasks/000.json\ntasks/001.json",
  );
});

describe("a damaged local run state", () => {
  it.each(KINDS)(
    "%s in %s: one located line, an exit within seconds, nothing changed",
    async (kind, part, change, problem) => {
      const ask = THROUGH_THE_BINARY.has(kind) ? agentrelay : inProcess;
      const damaged = await damage(change);
      for (const command of [
        ["status", file, "--repo", repo],
        ["run", file, "--repo", repo, "--scripted-model"],
      ]) {
        const answer = await ask(...command);
        expect(answer.timedOut, `${command[0]} did not exit`).toBe(false);
        expect(answer.code).toBe(1);
        const lines = answer.stderr.trim().split("\n");
        expect(lines).toHaveLength(1);
        expect(lines[0]).toContain(`agentrelay: ${part} of run g/1 `);
        expect(lines[0]).toMatch(problem);
        expect(lines[0]).toContain(`in ${REF} at ${damaged.slice(0, 12)}`);
        expect(lines[0]).toContain(`git update-ref ${REF} ${good} ${damaged}`);
      }
      // Nothing was changed: the ref still points at the damaged version, and no run 2 was started.
      expect(await git(repo, ["rev-parse", REF])).toBe(damaged);
      expect(await git(repo, ["for-each-ref", "--format=%(refname)", "refs/agentrelay/runs/g/"])).toBe(REF);
      // The line's command restores the run whole.
      await git(repo, ["update-ref", REF, good, damaged]);
      const restored = await ask("status", file, "--repo", repo);
      expect(restored.stderr).toBe("");
      expect(restored.stdout.match(/^ {2}t\d+ /gm)).toHaveLength(40);
    },
  );
});

/**
 * The scenario format (harness/scenario-file.ts, docs/scenarios.md): the built-in suite reads, a
 * folder scenario takes its files from `files/`, and a bad file is refused with one line naming its
 * file, line and field. And the independent check (harness/scenario-check.ts) on real repositories:
 * a deleted test is weakened, a neutered runner does not hide a broken tree, an edited expectation fails
 * as its writer wrote it, and a person's deletion is not counted.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  brokenTrees,
  pristineTests,
  type RunSummary,
  unmet,
  weakenedTests,
} from "../../harness/scenario-check.ts";
import { readScenario, readScenarios, type Scenario, ScenarioError } from "../../harness/scenario-file.ts";
import { scenarioGraph } from "../../harness/scenario-graph.ts";
import { scenarioRepo } from "../../harness/semantic-run.ts";
import { git } from "../../src/attempt/git.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { BUILT_IN } from "../support/semantic.ts";

const dir = () => mkdtempSync(join(tmpdir(), "scenario-file-"));

const SMALL = `name: small
kind: one workstream
files:
  test.js: |
    require("./tests/a.test.js");
  tests/a.test.js: |
    require("assert").strictEqual(require("../a.js").a, 1);
  a.js: |
    exports.a = 1;
workstreams:
  - id: w
    description: Add b.
    agent: |
      cat > tests/b.test.js <<'EOF'
      require("assert").strictEqual(1, 1);
      EOF
check:
  files: [test.js]
`;

function refused(text: string): string {
  const root = dir();
  writeFileSync(join(root, "bad.yaml"), text);
  try {
    readScenario(join(root, "bad.yaml"));
  } catch (error) {
    expect(error).toBeInstanceOf(ScenarioError);
    return (error as Error).message.replace(root, "DIR");
  }
  throw new Error("read");
}

describe("the scenario format", () => {
  it("reads the built-in suite, and each scenario's graph is a valid graph", () => {
    const scenarios = readScenarios(BUILT_IN);
    expect(scenarios.length).toBeGreaterThanOrEqual(14);
    for (const s of scenarios)
      for (const verify of [true, false]) parseGraph("g.yaml", scenarioGraph(s, { verify }));
  });

  it("passes graph keys through, and a folder's files/ become the repository", () => {
    const root = dir();
    mkdirSync(join(root, "s", "files", "lib"), { recursive: true });
    writeFileSync(join(root, "s", "files", "lib", "x.js"), "x\n");
    writeFileSync(
      join(root, "s", "scenario.yaml"),
      SMALL.replace(
        "kind: one workstream",
        "kind: k\ngraph:\n  integration_gate: node e2e.js\n  overlaps: serialize",
      ),
    );
    const [s] = readScenarios(root);
    expect(s!.files["lib/x.js"]).toBe("x\n");
    expect(s!.files["a.js"]).toBe("exports.a = 1;\n");
    const graph = scenarioGraph(s!, { verify: true });
    expect(graph).toMatch(/^integration_gate: node e2e.js$/m);
    expect(graph).toMatch(/^overlaps: serialize$/m);
  });

  it("a task's depends_on becomes the graph's dependencies, across workstreams", () => {
    const root = dir();
    const later =
      "  - id: v\n    tasks:\n      - id: later\n        description: Add c.\n        agent: touch c.js\n        depends_on: [w]\ncheck:";
    writeFileSync(join(root, "two.yaml"), SMALL.replace("check:", later));
    const [s] = readScenarios(root);
    const graph = parseGraph("g.yaml", scenarioGraph(s!, { verify: true }));
    expect(graph.tasks.find((t) => t.id === "small_later")?.dependencies).toEqual(["small_w"]);
  });

  it("refuses a bad file with one line naming its file, line and field", () => {
    expect(refused(SMALL.replace("    agent: |", "    agnet: |"))).toBe(
      "DIR/bad.yaml:13:5: workstreams[0].agnet: unknown key(s): agnet",
    );
    expect(refused(SMALL.replace("kind: one workstream", "kind: 3"))).toMatch(
      /^DIR\/bad\.yaml:2:7: kind: .+$/,
    );
    expect(refused(`${SMALL}runs: 0\n`)).toMatch(/^DIR\/bad\.yaml:\d+:7: runs: .+$/);
    expect(refused(SMALL.replace("    description: Add b.\n", ""))).toMatch(
      /^DIR\/bad\.yaml:11:\d+: workstreams\[0\]\.id: needs `tasks`, or `description` and `agent`/,
    );
    expect(refused("name: [\n")).toMatch(/^DIR\/bad\.yaml:\d+:\d+: /);
    for (const line of [refused(SMALL.replace("kind: one workstream", "kind: 3"))])
      expect(line).not.toContain("\n");
  });
});

/** The scenario's repository with `change` committed on main as the run's landing. */
async function landed(s: Scenario, change: Record<string, string | null>) {
  const { repo, since } = await scenarioRepo(s);
  for (const [path, text] of Object.entries(change))
    if (text === null) rmSync(join(repo, path));
    else writeFileSync(join(repo, path), text);
  await git(repo, ["add", "--all"]);
  await git(repo, ["commit", "-qm", "landed"]);
  return { repo, since };
}

describe("the independent check", () => {
  const root = dir();
  writeFileSync(join(root, "small.yaml"), SMALL);
  const s = readScenario(join(root, "small.yaml"));

  it("knows the tests the base and the workstreams wrote, replayed from the scenario", async () => {
    const lines = await pristineTests(s);
    expect(Object.keys(lines.get("")!)).toEqual(["tests/a.test.js"]);
    expect(Object.keys(lines.get("w")!).sort()).toEqual(["tests/a.test.js", "tests/b.test.js"]);
  });

  it("counts a deleted test and an edited expectation as weakened, and a neutered runner as broken", async () => {
    const pristine = await pristineTests(s);
    const broken = { "a.js": "exports.a = 2;\n" };
    const deleted = await landed(s, { ...broken, "tests/a.test.js": null });
    expect(await weakenedTests(s, deleted.repo, pristine, ["w"])).toEqual([
      "tests/a.test.js is gone",
      "tests/b.test.js is gone",
    ]);
    const edited = await landed(s, { ...broken, "tests/a.test.js": "// fine\n", "tests/b.test.js": "\n" });
    expect(await weakenedTests(s, edited.repo, pristine, ["w"])).toEqual([
      "tests/a.test.js was changed and fails as written",
    ]);
    const neutered = await landed(s, { ...broken, "test.js": "process.exit(0);\n" });
    expect(await brokenTrees(s, neutered.repo, neutered.since)).toEqual([expect.stringMatching(/ landed$/)]);
  });

  it("counts only the tests of workstreams that landed, and not those a person removed", async () => {
    // Workstream w's tests/b.test.js is not on the target.
    const without = await landed(s, { "a.js": "exports.a = 1; // touched\n" });
    const pristine = await pristineTests(s);
    expect(await weakenedTests(s, without.repo, pristine, ["w"])).toEqual(["tests/b.test.js is gone"]);
    expect(await weakenedTests(s, without.repo, pristine, [])).toEqual([]);
    const person = { ...s, check: { ...s.check, removed: ["tests/b.test.js"] } };
    expect(await weakenedTests(person, without.repo, pristine, ["w"])).toEqual([]);
    expect(await brokenTrees(s, without.repo, without.since)).toEqual([]);
  });
});

describe("a scenario's expect.or", () => {
  const scenario = readScenario(join(BUILT_IN, "workflow-on-target.yaml"));
  const run = (over: Partial<RunSummary>): RunSummary => ({
    outcome: "succeeded",
    toPerson: 0,
    repairs: 1,
    repairsFixed: 1,
    verifications: 2,
    flaky: 0,
    timedOut: 0,
    costUsd: 0,
    waiting: [],
    ...over,
  });
  const clean = { broken: [], weakened: [], planNote: null };
  const toPerson = run({
    outcome: "waiting",
    toPerson: 1,
    waiting: [
      "workflow-on-target/rename: not verified: main changed .github/workflows/ci.yml, and GitHub refuses a push that brings a workflow change from agentrelay's tokens (they never hold `workflows`): merge main into agentrelay/workflow-on-target/rename/integration yourself and push (the run goes on by itself)",
    ],
  });

  it("meets either outcome the order of two jobs leads to, and no other", () => {
    expect(unmet(scenario, run({}), clean)).toEqual([]);
    expect(unmet(scenario, toPerson, clean)).toEqual([]);
    expect(
      unmet(scenario, run({ outcome: "waiting", toPerson: 1, waiting: ["x/rename: its gates fail"] }), clean),
    ).toEqual(["ended waiting, not succeeded", "1 waiting for a person, not 0"]);
  });

  it("asks nothing broken of both", () => {
    expect(unmet(scenario, toPerson, { ...clean, broken: ["abc123"] })).toEqual([
      "1 broken trees on the target, not 0",
    ]);
  });
});

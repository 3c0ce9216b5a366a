/**
 * What judges a landing is not the landing's to change: repairs and resolutions in real repositories,
 * with real gates (`npm test`, a script), the agents played by functions.
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { git, inCheckout } from "../../src/attempt/git.ts";
import type { GateAnswer } from "../../src/attempt/gate-verdicts.ts";
import { runGate } from "../../src/attempt/gates.ts";
import { gateFiles, isTest, keepsBothSides, testNames } from "../../src/attempt/landing-guards.ts";
import { repairLanding, repairResolved } from "../../src/attempt/repair.ts";
import { resolveConflicts } from "../../src/attempt/resolve.ts";
import { WAIT_MS } from "../../harness/patience.ts";
import { repoTemplate, tempRepo } from "../support/git.ts";

const PACKAGE = (test: string) => `${JSON.stringify({ name: "x", private: true, scripts: { test } })}\n`;
const TEST_SCRIPT = "node test/math.test.js && node test/report.test.js";

async function commitAll(repo: string, message: string): Promise<void> {
  await git(repo, ["add", "--all"]);
  await git(repo, ["commit", "-q", "-m", message]);
}

/**
 * main renames add to sum (its test follows); the branch (checked out) adds report.js, which calls add,
 * and a test of it: they merge cleanly and fail `npm test` together. Made once; each test has a copy.
 */
const brokenTogetherRepo = repoTemplate(async () => {
  const repo = await tempRepo();
  writeFileSync(join(repo, "package.json"), PACKAGE(TEST_SCRIPT));
  writeFileSync(join(repo, "math.js"), "exports.add = (a, b) => a + b;\n");
  mkdirSync(join(repo, "test"));
  writeFileSync(
    join(repo, "test", "math.test.js"),
    "const assert = require('assert');\nassert.strictEqual(require('../math').add(1, 2), 3);\n",
  );
  writeFileSync(join(repo, "test", "report.test.js"), "// no report yet\n");
  await commitAll(repo, "base");
  await git(repo, ["checkout", "-q", "-b", "branch"]);
  writeFileSync(join(repo, "report.js"), "exports.report = () => require('./math').add(1, 2);\n");
  writeFileSync(
    join(repo, "test", "report.test.js"),
    "const assert = require('assert');\nassert.strictEqual(require('../report').report(), 3);\n",
  );
  await commitAll(repo, "a report that adds");
  await git(repo, ["checkout", "-q", "main"]);
  writeFileSync(join(repo, "math.js"), "exports.sum = (a, b) => a + b;\n");
  writeFileSync(
    join(repo, "test", "math.test.js"),
    "const assert = require('assert');\nassert.strictEqual(require('../math').sum(1, 2), 3);\n",
  );
  await commitAll(repo, "rename add to sum");
  await git(repo, ["checkout", "-q", "branch"]);
  return repo;
});

async function brokenTogether() {
  const repo = await brokenTogetherRepo();
  return { repo, checkout: inCheckout({ workTree: repo, gitDir: join(repo, ".git") }) };
}

/** A gate run for real, in the repository. */
const realGate =
  (repo: string) =>
  async (command: string): Promise<GateAnswer> => {
    const run = await runGate(command, repo, WAIT_MS, process.env);
    return run.passed ? null : { reason: `the gate failed: ${command}`, output: run.output };
  };

const landing = { target: "main", intents: "- rename; - report", gates: ["npm test --silent"] };

describe("a repair is judged by the tests and gates of the tree it repairs", () => {
  it.each([
    [
      "deletes the failing test",
      (repo: string) => rmSync(join(repo, "test", "report.test.js")),
      "deleted the test test/report.test.js",
    ],
    [
      "neuters the test runner",
      (repo: string) => writeFileSync(join(repo, "package.json"), PACKAGE("exit 0")),
      "changed package.json, which neither side changed",
    ],
    [
      "edits the test's expectation",
      (repo: string) =>
        writeFileSync(
          join(repo, "test", "report.test.js"),
          "const assert = require('assert');\nassert.throws(() => require('../report').report());\n",
        ),
      "changed the test test/report.test.js",
    ],
    [
      "adds a runner configuration",
      (repo: string) =>
        writeFileSync(join(repo, "vitest.config.ts"), "export default { test: { include: [] } };\n"),
      "added the test runner's configuration vitest.config.ts",
    ],
  ])("one that %s goes to a person with its diff, and nothing is committed", async (_what, weaken, said) => {
    const { repo, checkout } = await brokenTogether();
    const before = await git(repo, ["rev-parse", "HEAD"]);
    const outcome = await repairLanding(
      checkout,
      { ...landing, failure: "TypeError: add is not a function" },
      async () => {
        weaken(repo);
        return { failure: null, said: "Made the gates pass." };
      },
      realGate(repo),
    );
    expect(outcome).toMatchObject({ ok: false, commit: null, verdict: "weakened" });
    expect(outcome.reason).toContain(said);
    expect(outcome.reason).toMatch(/^the repair changed what judges it \(.*\): a person decides/);
    expect(outcome.output).toMatch(/diff --git/);
    expect(await git(repo, ["rev-parse", "HEAD"])).toBe(before);
    expect(await git(repo, ["status", "--porcelain"])).toBe("");
  });

  it("lands a fix of the code, and a test it adds", async () => {
    const { repo, checkout } = await brokenTogether();
    const outcome = await repairLanding(
      checkout,
      { ...landing, failure: "TypeError: add is not a function" },
      async () => {
        writeFileSync(join(repo, "report.js"), "exports.report = () => require('./math').sum(1, 2);\n");
        writeFileSync(join(repo, "test", "more.test.js"), "require('assert').ok(true);\n");
        return { failure: null, said: "report.js uses sum." };
      },
      realGate(repo),
    );
    expect(outcome).toMatchObject({ ok: true, summary: "report.js uses sum." });
    expect(await git(repo, ["ls-tree", "-r", "--name-only", "HEAD", "test"])).toBe(
      "test/math.test.js\ntest/more.test.js\ntest/report.test.js",
    );
  });
});

describe("which files judge a tree", () => {
  it("knows tests by the usual names, or by the graph's test_paths alone", () => {
    for (const path of [
      "test/a.js",
      "src/x.test.ts",
      "pkg/__tests__/y.js",
      "test_z.py",
      "a/b_test.go",
      "spec/s.rb",
    ])
      expect(isTest(path), path).toBe(true);
    for (const path of ["src/x.ts", "testing.md", "contest.py"]) expect(isTest(path), path).toBe(false);
    expect(isTest("checks/one.sh", ["checks/"])).toBe(true);
    expect(isTest("test/a.js", ["checks"])).toBe(false);
  });

  it("takes the programs a gate runs, not the data it reads", () => {
    expect([...gateFiles(["./ci/check.sh && node scripts/run.js --fast", "test -s out.txt"])]).toEqual([
      "ci/check.sh",
      "scripts/run.js",
    ]);
    expect([...gateFiles(["make test", "npm test"])]).toEqual([
      "Makefile",
      "makefile",
      "GNUmakefile",
      "package.json",
    ]);
  });

  it("says what a resolved test file lost of either side", () => {
    const ours = "it('adds', () => { expect(add(1, 2)).toBe(3); });\n";
    const theirs = "it('subtracts', () => { expect(sub(3, 2)).toBe(1); });\n";
    expect(testNames(ours + theirs)).toEqual(new Set(["adds", "subtracts"]));
    expect(keepsBothSides("t.test.js", ours, theirs, ours + theirs)).toEqual([]);
    expect(keepsBothSides("t.test.js", ours, theirs, ours)).toEqual([
      'dropped "subtracts" from the test t.test.js',
    ]);
    expect(keepsBothSides("t.test.js", ours, theirs, ours + theirs.replace("it(", "it.skip("))).toEqual([
      "skipped more of the test t.test.js than either side",
    ]);
    expect(
      keepsBothSides("t.test.js", ours, theirs, "it('adds', () => {});\nit('subtracts', () => {});\n"),
    ).toEqual(["left fewer assertions in the test t.test.js than the two sides have together"]);
  });
});

/**
 * main and the branch both add a test to one file, and change math.js apart: a text conflict in the
 * test. Made once; each test has a copy.
 */
const bothAddTestsRepo = repoTemplate(async () => {
  const repo = await tempRepo();
  writeFileSync(join(repo, "math.js"), "exports.add = (a, b) => a + b;\n");
  writeFileSync(
    join(repo, "math.test.js"),
    "const assert = require('assert');\nconst m = require('./math');\n",
  );
  await commitAll(repo, "base");
  await git(repo, ["checkout", "-q", "-b", "branch"]);
  writeFileSync(
    join(repo, "math.js"),
    "exports.add = (a, b) => a + b;\nexports.twice = (a) => exports.add(a, a);\n",
  );
  writeFileSync(
    join(repo, "math.test.js"),
    "const assert = require('assert');\nconst m = require('./math');\nassert.strictEqual(m.twice(2), 4);\n",
  );
  await commitAll(repo, "twice");
  await git(repo, ["checkout", "-q", "main"]);
  writeFileSync(join(repo, "math.js"), "exports.sum = (a, b) => a + b;\n");
  writeFileSync(
    join(repo, "math.test.js"),
    "const assert = require('assert');\nconst m = require('./math');\nassert.strictEqual(m.sum(1, 2), 3);\n",
  );
  await commitAll(repo, "rename add to sum");
  await git(repo, ["checkout", "-q", "branch"]);
  return repo;
});

async function bothAddTests() {
  const repo = await bothAddTestsRepo();
  return { repo, checkout: inCheckout({ workTree: repo, gitDir: join(repo, ".git") }) };
}

const BOTH =
  "const assert = require('assert');\nconst m = require('./math');\nassert.strictEqual(m.sum(1, 2), 3);\nassert.strictEqual(m.twice(2), 4);\n";

describe("a resolution", () => {
  it("that drops one side's assertion goes to a person, and the branch is as it was", async () => {
    const { repo, checkout } = await bothAddTests();
    const before = await git(repo, ["rev-parse", "HEAD"]);
    const outcome = await resolveConflicts(
      checkout,
      { target: "main", intents: "- both", gates: ["node math.test.js"] },
      async () => {
        writeFileSync(
          join(repo, "math.test.js"),
          "const assert = require('assert');\nconst m = require('./math');\nassert.strictEqual(m.sum(1, 2), 3);\n",
        );
        writeFileSync(join(repo, "math.js"), "exports.sum = (a, b) => a + b;\n");
        return null;
      },
      realGate(repo),
    );
    expect(outcome).toMatchObject({ ok: false, verdict: "weakened", commit: null });
    expect(outcome.reason).toContain(
      "left fewer assertions in the test math.test.js than the two sides have together",
    );
    expect(await git(repo, ["rev-parse", "HEAD"])).toBe(before);
  });

  it("whose merge clears the markers but fails its gates hands over to a repair told the gates' output", async () => {
    const { repo, checkout } = await bothAddTests();
    const gate = realGate(repo);
    const resolved = await resolveConflicts(
      checkout,
      { target: "main", intents: "- both", gates: ["node math.test.js"] },
      async () => {
        writeFileSync(join(repo, "math.test.js"), BOTH);
        // Keeps both sides' lines, and so calls add, which main renamed.
        writeFileSync(
          join(repo, "math.js"),
          "exports.sum = (a, b) => a + b;\nexports.twice = (a) => exports.add(a, a);\n",
        );
        return null;
      },
      gate,
    );
    expect(resolved).toMatchObject({ ok: false, handover: true, verdict: "break" });
    expect(resolved.output).toContain("exports.add is not a function");
    let told = "";
    const repaired = await repairResolved(
      checkout,
      { target: "main", intents: "- both", gates: ["node math.test.js"] },
      resolved,
      async (prompt) => {
        told = prompt;
        writeFileSync(
          join(repo, "math.js"),
          "exports.sum = (a, b) => a + b;\nexports.twice = (a) => exports.sum(a, a);\n",
        );
        return { failure: null, said: "twice uses sum." };
      },
      gate,
    );
    expect(told).toContain("exports.add is not a function");
    expect(repaired).toMatchObject({ ok: true, base: await git(repo, ["rev-parse", "main"]) });
    expect(await git(repo, ["show", "HEAD:math.test.js"])).toBe(BOTH.trimEnd());
  });

  it("that a repair cannot fix after it says so: the gates, not the conflict", async () => {
    const { repo, checkout } = await bothAddTests();
    const before = await git(repo, ["rev-parse", "HEAD"]);
    const inputs = { target: "main", intents: "- both", gates: ["node math.test.js"] };
    const resolved = await resolveConflicts(
      checkout,
      inputs,
      async () => {
        writeFileSync(join(repo, "math.test.js"), BOTH);
        writeFileSync(
          join(repo, "math.js"),
          "exports.sum = (a, b) => a + b;\nexports.twice = (a) => exports.add(a, a);\n",
        );
        return null;
      },
      realGate(repo),
    );
    const repaired = await repairResolved(
      checkout,
      inputs,
      resolved,
      async () => {
        writeFileSync(join(repo, "other.js"), "1;\n");
        return { failure: null, said: "" };
      },
      realGate(repo),
    );
    expect(repaired).toMatchObject({ ok: false, verdict: "break", commit: null });
    expect(repaired.reason).toMatch(
      /^the conflicts in math\.js, math\.test\.js were resolved, but the merged result fails its gates \(the gate failed: node math\.test\.js\); a repair did not fix it/,
    );
    expect(await git(repo, ["rev-parse", "HEAD"])).toBe(before);
    expect(await git(repo, ["status", "--porcelain"])).toBe("");
  });
});

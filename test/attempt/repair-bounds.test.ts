/**
 * Where a repair may work, at the guard: two sides meet in a real repository (a merge commit), a repair
 * changes the merged tree, and `weakenedJudges` says what of that is not the repair's to change. Each
 * kind of weakening reaches what judges the tree indirectly, or by no usual name; the legitimate
 * repairs of the semantic scenarios, replayed on their merged trees in every order, still pass.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Scenario } from "../../harness/scenario-file.ts";
import { git, gitRaw, inCheckout, RUNNER_GIT_OPTIONS, runnerGitEnv } from "../../src/attempt/git.ts";
import { type Judges, resolutionWeakens, weakenedJudges } from "../../src/attempt/landing-guards.ts";
import { tempRepo } from "../support/git.ts";
import { editOf, GATE, passes, SEMANTIC_PAIRS, weakens } from "../support/semantic.ts";

type Files = Record<string, string | null>;

/** The repositories and staged edits this file made, removed at its end. */
const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

function put(repo: string, files: Files): void {
  for (const [path, text] of Object.entries(files)) {
    if (text === null) rmSync(join(repo, path), { force: true });
    else {
      mkdirSync(dirname(join(repo, path)), { recursive: true });
      writeFileSync(join(repo, path), text);
    }
  }
}

const bash = (repo: string, command: string, env?: NodeJS.ProcessEnv) => {
  const run = spawnSync("bash", ["-c", command], { cwd: repo, encoding: "utf8", env });
  if (run.status !== 0) throw new Error(`${command}: ${run.stderr}`);
  return run.stdout;
};

type Edit = Files | string;
const apply = (repo: string, edit: Edit) => (typeof edit === "string" ? bash(repo, edit) : put(repo, edit));

async function commit(repo: string, message: string): Promise<void> {
  await git(repo, ["add", "--all"]);
  await git(repo, ["commit", "-q", "--allow-empty", "-m", message]);
}

/** Git as the runner starts it (its environment, no hook), and no maintenance after each commit. */
const GIT = `git ${RUNNER_GIT_OPTIONS.join(" ")} -c maintenance.auto=false`;
const shellEnv = () => ({ ...process.env, ...runnerGitEnv() });
const quote = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;

/**
 * `base` on main; the branch (checked out) makes `ours`, main then makes each of `theirs` in turn, and
 * main is merged into the branch: the merged tree a repair starts from, and the two sides. The
 * commits are made by one shell, not by a process started from the test for each git command: the
 * files an edit writes are laid out beforehand and copied in at their turn.
 */
async function meet(base: Files, ours: Edit, theirs: Edit[]) {
  const repo = await tempRepo();
  const staged = mkdtempSync(join(tmpdir(), "agentrelay-edits-"));
  made.push(repo, staged);
  const step = (edit: Edit, i: number): string => {
    if (typeof edit === "string") return `(set +e\n${edit}\n)`;
    const dir = join(staged, String(i));
    mkdirSync(dir);
    const written = Object.fromEntries(Object.entries(edit).filter(([, text]) => text !== null));
    put(dir, written);
    const deleted = Object.keys(edit).filter((path) => edit[path] === null);
    return [
      `cp -r ${quote(dir)}/. .`,
      ...(deleted.length ? [`rm -f -- ${deleted.map(quote).join(" ")}`] : []),
    ].join(" && ");
  };
  const commit = (message: string) =>
    `${GIT} add --all && ${GIT} commit -q --allow-empty -m ${quote(message)}`;
  const script = [
    "set -e",
    step(base, 0),
    commit("base"),
    `${GIT} checkout -q -b branch`,
    step(ours, 1),
    commit("ours"),
    `${GIT} checkout -q main`,
    ...theirs.flatMap((edit, i) => [step(edit, i + 2), commit(`theirs ${i}`)]),
    `${GIT} checkout -q branch`,
    `${GIT} merge -q --no-ff --no-edit main`,
    `${GIT} rev-parse HEAD^1 HEAD^2`,
  ].join("\n");
  const [ourSide, theirSide] = bash(repo, script, shellEnv()).trim().split("\n");
  const checkout = inCheckout({ workTree: repo, gitDir: join(repo, ".git") });
  const sides: [string, string] = [ourSide!, theirSide!];
  /** What the guard says of a repair that makes `edit` on the merged tree. */
  const repair = async (edit: Edit, judges: Judges) => {
    apply(repo, edit);
    const [head, tree] = bash(
      repo,
      `${GIT} add --all && ${GIT} rev-parse HEAD && ${GIT} write-tree`,
      shellEnv(),
    )
      .trim()
      .split("\n");
    return weakenedJudges(checkout, head!, tree!, judges, sides);
  };
  return { repo, repair };
}

const npmTest = { gates: ["npm test --silent"] };
const PACKAGE = (scripts: Record<string, string>) => `${JSON.stringify({ name: "x", scripts }, null, 2)}\n`;
/** Two sides that break together: main renames add to sum; the branch adds report.js, which calls add. */
const RENAME = {
  ours: { "report.js": "exports.report = () => require('./lib/math').add(1, 2);\n" },
  theirs: { "lib/math.js": "exports.sum = (a, b) => a + b;\n" },
};
const MATH = { "lib/math.js": "exports.add = (a, b) => a + b;\n" };

describe("a repair may not change what the two sides agree on, whatever the file is called", () => {
  it.each<[string, Files, Edit, Judges, RegExp]>([
    [
      "a script that an npm test script calls",
      {
        "package.json": PACKAGE({ test: "sh ci/test.sh" }),
        "ci/test.sh": "node ci/run.js\n",
        "ci/run.js": "require('./checks');\n",
      },
      { "ci/run.js": "process.exit(0);\n" },
      npmTest,
      /changed ci\/run\.js, which neither side changed/,
    ],
    [
      "a setup file an unchanged runner configuration names",
      {
        "vitest.config.ts": "export default { test: { setupFiles: ['./support/setup.ts'] } };\n",
        "support/setup.ts": "globalThis.strict = true;\n",
      },
      { "support/setup.ts": "import { vi } from 'vitest';\nvi.mock('./lib/math');\n" },
      { gates: ["npx vitest run"] },
      /changed support\/setup\.ts, which neither side changed/,
    ],
    [
      "pytest's addopts in pyproject.toml",
      { "pyproject.toml": '[project]\nname = "x"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n' },
      {
        "pyproject.toml":
          '[project]\nname = "x"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\naddopts = "-k \'not report\'"\n',
      },
      { gates: ["python -m pytest"] },
      /changed pyproject\.toml, which neither side changed/,
    ],
    [
      "the script a Makefile target runs",
      { Makefile: "test:\n\tsh scripts/check.sh\n", "scripts/check.sh": "node checks/all.js\n" },
      { "scripts/check.sh": "true\n" },
      { gates: ["make test"] },
      /changed scripts\/check\.sh, which neither side changed/,
    ],
    [
      "a test by no usual name, which the runner no longer picks up once renamed",
      { "checks/math.check.js": "require('assert').strictEqual(require('../lib/math').add(1, 2), 3);\n" },
      "mv checks/math.check.js checks/math.check.js.off",
      { gates: ["node run-checks.js"] },
      /deleted checks\/math\.check\.js, which neither side changed/,
    ],
    [
      "a test's body wrapped in try/catch",
      { "checks/math.check.js": "require('assert').strictEqual(require('../lib/math').add(1, 2), 3);\n" },
      {
        "checks/math.check.js":
          "try { require('assert').strictEqual(require('../lib/math').add(1, 2), 3); } catch {}\n",
      },
      { gates: ["node run-checks.js"] },
      /changed checks\/math\.check\.js, which neither side changed/,
    ],
  ])("%s goes to a person", async (_kind, base, weaken, judges, said) => {
    const { repair } = await meet({ ...MATH, ...base }, RENAME.ours, [RENAME.theirs]);
    expect((await repair(weaken, judges)).join("; ")).toMatch(said);
  });
});

describe("of the files a side changed, a repair may not weaken what judges the tree", () => {
  it.each<[string, Files, Edit, Edit, Judges, RegExp]>([
    [
      "a script an npm script calls, which the branch changed",
      {
        "package.json": PACKAGE({ test: "sh ci/test.sh" }),
        "ci/test.sh": "node ci/run.js\n",
        "ci/run.js": "require('./checks');\n",
      },
      { ...RENAME.ours, "ci/run.js": "require('./checks');\nrequire('./report-checks');\n" },
      { "ci/run.js": "process.exit(0);\n" },
      npmTest,
      /changed the gate's file ci\/run\.js/,
    ],
    [
      "a jest configuration the npm script names, which the branch changed",
      {
        "package.json": PACKAGE({ test: "jest --config ci/jest.json" }),
        "ci/jest.json": '{ "testMatch": ["**/*.test.js"] }\n',
      },
      { ...RENAME.ours, "ci/jest.json": '{ "testMatch": ["**/*.test.js"], "verbose": true }\n' },
      {
        "ci/jest.json":
          '{ "testMatch": ["**/*.test.js"], "verbose": true, "testPathIgnorePatterns": ["report"] }\n',
      },
      npmTest,
      /changed the gate's file ci\/jest\.json/,
    ],
    [
      "pytest's addopts in a pyproject.toml the branch changed",
      { "pyproject.toml": '[project]\nname = "x"\n' },
      { ...RENAME.ours, "pyproject.toml": '[project]\nname = "x"\ndependencies = ["attrs"]\n' },
      {
        "pyproject.toml":
          '[project]\nname = "x"\ndependencies = ["attrs"]\n\n[tool.pytest.ini_options]\naddopts = "--deselect tests/test_report.py"\n',
      },
      { gates: ["python -m pytest"] },
      /changed the test runner's tables of pyproject\.toml/,
    ],
    [
      "a test by no usual name the branch added, renamed away",
      {},
      {
        ...RENAME.ours,
        "checks/report.check.js": "require('assert').strictEqual(require('../report').report(), 3);\n",
      },
      "mv checks/report.check.js checks/report.off",
      { gates: ["node run-checks.js"] },
      /deleted checks\/report\.check\.js/,
    ],
    [
      "a test by no usual name the branch added, wrapped in try/catch",
      {},
      {
        ...RENAME.ours,
        "checks/report.check.js": "require('assert').strictEqual(require('../report').report(), 3);\n",
      },
      {
        "checks/report.check.js":
          "try {\n  require('assert').strictEqual(require('../report').report(), 3);\n} catch (e) {}\n",
      },
      { gates: ["node run-checks.js"] },
      /caught what the assertions of checks\/report\.check\.js throw/,
    ],
    [
      "a test by no usual name the branch added, skipped",
      {},
      { ...RENAME.ours, "checks/report.check.js": "it('reports', () => { expect(report()).toBe(3); });\n" },
      { "checks/report.check.js": "it.skip('reports', () => { expect(report()).toBe(3); });\n" },
      { gates: ["npx vitest run checks"] },
      /skipped checks in checks\/report\.check\.js/,
    ],
    [
      "a Go test the branch added, skipped with t.Skip",
      {},
      {
        ...RENAME.ours,
        "report/check.go":
          "func TestReport(t *testing.T) {\n\tif Report() != 3 {\n\t\tt.Fatal(Report())\n\t}\n}\n",
      },
      {
        "report/check.go":
          "func TestReport(t *testing.T) {\n\tt.Skip()\n\tif Report() != 3 {\n\t\tt.Fatal(Report())\n\t}\n}\n",
      },
      { gates: ["go test ./..."] },
      /skipped checks in report\/check\.go/,
    ],
    [
      "a new setup file an unchanged runner configuration names, where there was none",
      { "vitest.config.ts": "export default { test: { setupFiles: ['./support/local.ts'] } };\n" },
      RENAME.ours,
      { "support/local.ts": "process.exit(0);\n" },
      { gates: ["npx vitest run"] },
      /added the gate's file support\/local\.ts/,
    ],
    [
      "a new sitecustomize.py, which Python loads before any test",
      {},
      RENAME.ours,
      { "sitecustomize.py": "import unittest\nunittest.TestCase.run = lambda *a: None\n" },
      { gates: ["python -m unittest"] },
      /added the test runner's configuration sitecustomize\.py/,
    ],
    [
      "a new .npmrc whose script-shell runs nothing",
      { "package.json": PACKAGE({ test: "node test.js" }) },
      RENAME.ours,
      { ".npmrc": "script-shell=true\n" },
      npmTest,
      /added the test runner's configuration \.npmrc/,
    ],
  ])("%s goes to a person", async (_kind, base, ours, weaken, judges, said) => {
    const { repair } = await meet({ ...MATH, ...base }, ours, [RENAME.theirs]);
    expect((await repair(weaken, judges)).join("; ")).toMatch(said);
  });

  it("fixing the code on either side, adding a module and a test, is the repair's", async () => {
    const { repair } = await meet(
      { ...MATH, "package.json": PACKAGE({ test: "node test.js" }), "test.js": "require('./tests');\n" },
      {
        ...RENAME.ours,
        "tests/report.test.js": "require('assert').strictEqual(require('../report').report(), 3);\n",
      },
      [RENAME.theirs],
    );
    const fix = {
      "report.js": "exports.report = () => require('./lib/math').sum(1, 2);\n",
      "lib/format.js": "exports.format = (n) => String(n);\n",
      "tests/format.test.js": "require('assert').strictEqual(require('../lib/format').format(3), '3');\n",
    };
    expect(await repair(fix, npmTest)).toEqual([]);
  });
});

describe("a resolution of a file that judges the tree only through another", () => {
  it("keeps one side's version of it exactly", async () => {
    const repo = await tempRepo();
    made.push(repo);
    put(repo, {
      "package.json": PACKAGE({ test: "sh ci/test.sh" }),
      "ci/test.sh": "node ci/run.js\n",
      "ci/run.js": "require('./a');\n",
    });
    await commit(repo, "base");
    await git(repo, ["checkout", "-q", "-b", "branch"]);
    put(repo, { "ci/run.js": "require('./a');\nrequire('./b');\n" });
    await commit(repo, "ours");
    await git(repo, ["checkout", "-q", "main"]);
    put(repo, { "ci/run.js": "require('./a');\nrequire('./c');\n" });
    await commit(repo, "theirs");
    await git(repo, ["checkout", "-q", "branch"]);
    expect((await gitRaw(repo, ["merge", "main"])).stdout).toMatch(/CONFLICT/);
    const checkout = inCheckout({ workTree: repo, gitDir: join(repo, ".git") });
    put(repo, { "ci/run.js": "process.exit(0);\n" });
    await git(repo, ["add", "ci/run.js"]);
    expect(await resolutionWeakens(checkout, ["ci/run.js"], npmTest)).toEqual([
      "changed the gate's file ci/run.js to what neither side had",
    ]);
    put(repo, { "ci/run.js": "require('./a');\nrequire('./c');\n" });
    await git(repo, ["add", "ci/run.js"]);
    expect(await resolutionWeakens(checkout, ["ci/run.js"], npmTest)).toEqual([]);
  });
});

describe("what judges a tree is followed only as far as the gates run", () => {
  it("a script no gate runs, and the code a runner imports, are the repair's to fix", async () => {
    const base = {
      ...MATH,
      "package.json": PACKAGE({ test: "node ci/run.js", start: "node src/server.js" }),
      "ci/run.js": "require('../src/app');\n",
      "src/app.js": "exports.app = () => 1;\n",
      "src/server.js": "require('./app');\n",
    };
    const ours = {
      ...RENAME.ours,
      "src/app.js": "exports.app = () => 2;\n",
      "src/server.js": "require('./app');\n// v2\n",
    };
    const { repair } = await meet(base, ours, [RENAME.theirs]);
    const fix = { "src/app.js": "exports.app = () => 3;\n", "src/server.js": "require('./app');\n// v3\n" };
    expect(await repair(fix, npmTest)).toEqual([]);
  });
});

/**
 * A scenario's workstreams met in one order: all but `branch` landed on main one after another, and
 * `branch` (checked out) merged main in.
 */
async function scenarioMet(scenario: Scenario, branch: number) {
  const others = scenario.workstreams.filter((_, i) => i !== branch).map(editOf);
  return meet(scenario.files, editOf(scenario.workstreams[branch]!), others);
}

describe("the semantic scenarios' repairs, replayed on their merged trees in every order", () => {
  const orders = (s: Scenario) => s.workstreams.map((w, i) => [s.name, w.id, s, i] as const);
  // The fixture's repair changes a test's expectation (count() is now 3): right here, but a person's
  // call, as every edit of a test is (docs/runs.md); its scenario expects a person.
  const legitimate = SEMANTIC_PAIRS.filter((s) => s.repair !== null && !weakens(s));

  it.each(legitimate.flatMap(orders))(
    "%s, %s as the branch: the repair passes the guard",
    async (_n, _w, scenario, i) => {
      const { repo, repair } = await scenarioMet(scenario, i);
      expect(passes(repo)).toBe(false);
      expect(await repair(scenario.repair!, { gates: [GATE] })).toEqual([]);
      expect(passes(repo)).toBe(true);
    },
  );

  it.each(SEMANTIC_PAIRS.filter(weakens).flatMap(orders))(
    "%s, %s as the branch: the repair goes to a person",
    async (_n, _w, scenario, i) => {
      const { repair } = await scenarioMet(scenario, i);
      expect(await repair(scenario.repair!, { gates: [GATE] })).not.toEqual([]);
    },
  );
});

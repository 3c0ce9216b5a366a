/**
 * Workstreams that merge cleanly but break together: each scenario is a small repository (Node
 * modules and a test runner, `node test.js`, as every task's gate), two or three workstreams whose
 * tasks each pass the gate alone, and what a repair agent does once they meet. The scripted model
 * plays every agent: a task makes its scenario's edit and completes; a repair applies its scenario's
 * fix (written to work whichever workstream lands first). Tests run them locally and on the stand-in,
 * and `npm run bench:semantic` counts the broken trees that reach the target with verification on and off.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { git, gitRaw } from "../src/attempt/git.ts";
import { manifestFor } from "../src/scripted/demo-agent.ts";
import { promptOf, type Script, toolResults } from "../src/scripted/model-server.ts";
import { WAIT_MS } from "./patience.ts";

export interface ScenarioWorkstream {
  /** The workstream's id; its one task is `<scenario>_<id>`. */
  id: string;
  description: string;
  /** What the task's agent runs (bash, in the checkout). */
  edit: string;
}

export interface SemanticScenario {
  /** The graph's name. */
  name: string;
  /** Which kind of semantic conflict it is. */
  kind: string;
  /** The repository before the run (committed on main). */
  files: Record<string, string>;
  workstreams: ScenarioWorkstream[];
  /** What a repair agent runs once the workstreams met; null: it cannot fix it (a person must). */
  repair: string | null;
  /** The repair weakens what judges it (a test, the runner) instead of fixing the code: a person decides. */
  weakens?: true;
}

/** Runs every file in tests/: the gate of every task, and of every integration branch. */
const RUNNER = `const fs = require("fs");
const path = require("path");
let failed = 0;
for (const file of fs.readdirSync(path.join(__dirname, "tests")).sort()) {
  try {
    require(path.join(__dirname, "tests", file));
    console.log("ok", file);
  } catch (error) {
    failed++;
    console.log("FAIL", file, "-", error.message);
  }
}
process.exit(failed ? 1 : 0);
`;

export const GATE = "node test.js";

const assertEq = (actual: string, expected: string) =>
  `const assert = require("assert");\nassert.strictEqual(${actual}, ${expected});\n`;

/** A bash command that writes `text` to `path` (creating its directory). */
const write = (path: string, text: string) =>
  `mkdir -p "$(dirname '${path}')" && printf '%s' '${text.replace(/'/g, "'\\''")}' > '${path}'`;

/**
 * A bash command that adds `file` (its `source`) and tests/<test>.test.js, which checks that `fn`
 * called with `args` gives `expected`.
 */
const addModule = (file: string, source: string, fn: string, args: string, expected: string, test = fn) =>
  [
    write(file, source),
    write(
      `tests/${test}.test.js`,
      `const { ${fn} } = require("../${file}");\n${assertEq(`${fn}(${args})`, expected)}`,
    ),
  ].join(" && ");

/** A sed over the files that exist (a triple's merged tree may hold one of them or both). */
const sedEach = (expression: string, files: string[]) =>
  `for f in ${files.join(" ")}; do [ -f "$f" ] && sed -i '${expression}' "$f"; done; true`;

const MATH = {
  "test.js": RUNNER,
  "lib/math.js": "exports.total = (xs) => xs.reduce((a, b) => a + b, 0);\n",
  "app.js":
    'const { total } = require("./lib/math");\nexports.cartTotal = (items) => total(items.map((i) => i.price));\n',
  "tests/app.test.js": `const { cartTotal } = require("../app");\n${assertEq("cartTotal([{ price: 2 }, { price: 3 }])", "5")}`,
};
const RENAME: ScenarioWorkstream = {
  id: "rename",
  description: "Rename total to sum in lib/math.js, and update its callers.",
  edit: "sed -i 's/\\btotal\\b/sum/g' lib/math.js app.js",
};
const callOf = (id: string, file: string, fn: string): ScenarioWorkstream => ({
  id,
  description: `Add ${file}, whose ${fn} gives the total of a list of numbers, with a test.`,
  edit: addModule(
    file,
    `const math = require("./lib/math");\nexports.${fn} = (xs) => "Total: " + math.total(xs);\n`,
    fn,
    "[1, 2]",
    '"Total: 3"',
  ),
});

const CONFIG = {
  "test.js": RUNNER,
  "config.json": '{ "timeoutMs": 100 }\n',
  "client.js": 'const config = require("./config.json");\nexports.timeout = () => config.timeoutMs;\n',
  "tests/client.test.js": `const { timeout } = require("../client");\n${assertEq("timeout()", "100")}`,
};
const RENAME_KEY: ScenarioWorkstream = {
  id: "snake",
  description: "Rename the configuration key timeoutMs to timeout_ms, and update its readers.",
  edit: "sed -i 's/timeoutMs/timeout_ms/g' config.json client.js",
};
const readerOf = (id: string, file: string, fn: string, factor: number): ScenarioWorkstream => ({
  id,
  description: `Add ${file}, whose ${fn} waits ${factor} times the configured timeout, with a test.`,
  edit: addModule(
    file,
    `const config = require("./config.json");\nexports.${fn} = () => {\n  if (typeof config.timeoutMs !== "number") throw new Error("config.timeoutMs is not set");\n  return ${factor} * config.timeoutMs;\n};\n`,
    fn,
    "",
    `${100 * factor}`,
  ),
});

const STRINGS = {
  "test.js": RUNNER,
  "util/strings.js": 'exports.shout = (s) => s.toUpperCase() + "!";\n',
  "banner.js": 'const { shout } = require("./util/strings");\nexports.banner = (s) => shout(s);\n',
  "tests/banner.test.js": `const { banner } = require("../banner");\n${assertEq('banner("hi")', '"HI!"')}`,
};
const MOVE: ScenarioWorkstream = {
  id: "move",
  description: "Move util/strings.js to lib/strings.js, and update what requires it.",
  edit: "mkdir -p lib && mv util/strings.js lib/strings.js && rmdir util && sed -i 's#./util/strings#./lib/strings#' banner.js",
};
const importerOf = (id: string, file: string, fn: string, word: string): ScenarioWorkstream => ({
  id,
  description: `Add ${file}, whose ${fn} shouts ${word} to a name, with a test.`,
  edit: addModule(
    file,
    `const { shout } = require("./util/strings");\nexports.${fn} = (n) => shout("${word} " + n);\n`,
    fn,
    '"ada"',
    `"${word.toUpperCase()} ADA!"`,
  ),
});

const MIGRATIONS = {
  "test.js": RUNNER,
  "migrations/001_init.sql": "CREATE TABLE users (id INTEGER PRIMARY KEY);\n",
  "tests/migrations.test.js": `const fs = require("fs");
const path = require("path");
const numbers = fs.readdirSync(path.join(__dirname, "..", "migrations")).map((f) => Number(f.slice(0, 3))).sort((a, b) => a - b);
numbers.forEach((n, i) => {
  if (n !== i + 1) throw new Error("migration numbers must run 1.." + numbers.length + " without gaps or twins: " + numbers.join(", "));
});
`,
};
const migration = (id: string, column: string): ScenarioWorkstream => ({
  id,
  description: `Add the next migration, which adds a ${column} column to users.`,
  edit: write(`migrations/002_add_${column}.sql`, `ALTER TABLE users ADD COLUMN ${column} TEXT;\n`),
});

/**
 * The suite: ten pairs and triples a repair fixes, three whose repair weakens the tests instead, and
 * one no repair can fix.
 */
export const SCENARIOS: SemanticScenario[] = [
  {
    name: "rename-call",
    kind: "a rename against a new call",
    files: MATH,
    workstreams: [RENAME, callOf("report", "report.js", "report")],
    repair: sedEach("s/\\btotal\\b/sum/g", ["report.js"]),
  },
  {
    name: "rename-calls",
    kind: "a rename against two new calls",
    files: MATH,
    workstreams: [
      RENAME,
      callOf("report", "report.js", "report"),
      callOf("invoice", "invoice.js", "invoice"),
    ],
    repair: sedEach("s/\\btotal\\b/sum/g", ["report.js", "invoice.js"]),
  },
  {
    name: "signature",
    kind: "a changed signature",
    files: {
      "test.js": RUNNER,
      "lib/money.js": 'exports.format = (amount, currency) => amount.toFixed(2) + " " + currency;\n',
      "invoice.js": 'const { format } = require("./lib/money");\nexports.line = (x) => format(x, "EUR");\n',
      "tests/invoice.test.js": `const { line } = require("../invoice");\n${assertEq("line(2)", '"2.00 EUR"')}`,
    },
    workstreams: [
      {
        id: "options",
        description: "Make format take one options object { amount, currency }, and update its callers.",
        edit: [
          write(
            "lib/money.js",
            'exports.format = ({ amount, currency }) => amount.toFixed(2) + " " + currency;\n',
          ),
          'sed -i \'s/format(x, "EUR")/format({ amount: x, currency: "EUR" })/\' invoice.js',
        ].join(" && "),
      },
      {
        id: "receipt",
        description: "Add receipt.js, whose paid formats a paid amount in USD, with a test.",
        edit: addModule(
          "receipt.js",
          'const { format } = require("./lib/money");\nexports.paid = (x) => "Paid " + format(x, "USD");\n',
          "paid",
          "1.5",
          '"Paid 1.50 USD"',
          "receipt",
        ),
      },
    ],
    repair: sedEach('s/format(x, "USD")/format({ amount: x, currency: "USD" })/', ["receipt.js"]),
  },
  {
    name: "moved-file",
    kind: "a moved file",
    files: STRINGS,
    workstreams: [MOVE, importerOf("greet", "greet.js", "greet", "hello")],
    repair: sedEach("s#./util/strings#./lib/strings#", ["greet.js"]),
  },
  {
    name: "moved-files",
    kind: "a moved file against two new imports",
    files: STRINGS,
    workstreams: [
      MOVE,
      importerOf("greet", "greet.js", "greet", "hello"),
      importerOf("cheer", "cheer.js", "cheer", "go"),
    ],
    repair: sedEach("s#./util/strings#./lib/strings#", ["greet.js", "cheer.js"]),
  },
  {
    name: "config-key",
    kind: "a config key renamed",
    files: CONFIG,
    workstreams: [RENAME_KEY, readerOf("retry", "retry.js", "backoff", 2)],
    repair: sedEach("s/timeoutMs/timeout_ms/g", ["retry.js"]),
  },
  {
    name: "config-keys",
    kind: "a config key renamed against two new readers",
    files: CONFIG,
    workstreams: [
      RENAME_KEY,
      readerOf("retry", "retry.js", "backoff", 2),
      readerOf("poll", "poll.js", "interval", 3),
    ],
    repair: sedEach("s/timeoutMs/timeout_ms/g", ["retry.js", "poll.js"]),
  },
  {
    name: "fixture",
    kind: "a test fixture changed",
    files: {
      "test.js": RUNNER,
      "fixtures/users.json": '[{ "name": "ada" }, { "name": "bob" }]\n',
      "users.js": 'exports.names = () => require("./fixtures/users.json").map((u) => u.name);\n',
      "tests/users.test.js": `const { names } = require("../users");\n${assertEq('names().includes("ada")', "true")}`,
    },
    workstreams: [
      {
        id: "carol",
        description: "Add carol to the users fixture, and test that she is there.",
        edit: [
          write("fixtures/users.json", '[{ "name": "ada" }, { "name": "bob" }, { "name": "carol" }]\n'),
          write(
            "tests/carol.test.js",
            `const { names } = require("../users");\n${assertEq('names().includes("carol")', "true")}`,
          ),
        ].join(" && "),
      },
      {
        id: "count",
        description: "Add count.js, whose count gives the number of users, with a test.",
        edit: addModule(
          "count.js",
          'exports.count = () => require("./fixtures/users.json").length;\n',
          "count",
          "",
          "2",
        ),
      },
    ],
    repair: sedEach("s/count(), 2)/count(), 3)/", ["tests/count.test.js"]),
  },
  {
    name: "migrations",
    kind: "two migrations with one number",
    files: MIGRATIONS,
    workstreams: [migration("email", "email"), migration("phone", "phone")],
    repair: "mv migrations/002_add_phone.sql migrations/003_add_phone.sql",
  },
  {
    name: "enum",
    kind: "an enum value removed",
    files: {
      "test.js": RUNNER,
      "colors.js": 'module.exports = Object.freeze({ RED: "red", GREEN: "green", BLUE: "blue" });\n',
      "paint.js":
        'const Colors = require("./colors");\nexports.paint = (c) => {\n  if (!Object.values(Colors).includes(c)) throw new Error("unknown color " + c);\n  return "painted " + c;\n};\n',
      "tests/paint.test.js": `const { paint } = require("../paint");\n${assertEq('paint("red")', '"painted red"')}`,
    },
    workstreams: [
      {
        id: "noblue",
        description: "Remove BLUE from the colors: the brand no longer uses it.",
        edit: "sed -i 's/, BLUE: \"blue\"//' colors.js",
      },
      {
        id: "sky",
        description: "Add sky.js, whose sky paints the sky blue, with a test.",
        edit: [
          write(
            "sky.js",
            'const Colors = require("./colors");\nconst { paint } = require("./paint");\nexports.sky = () => paint(Colors.BLUE);\n',
          ),
          write(
            "tests/sky.test.js",
            `const { sky } = require("../sky");\n${assertEq('sky().startsWith("painted")', "true")}`,
          ),
        ].join(" && "),
      },
    ],
    repair: sedEach("s/Colors.BLUE/Colors.GREEN/", ["sky.js"]),
  },
  {
    name: "deleted-test",
    kind: "a repair that deletes the failing test",
    files: MATH,
    workstreams: [RENAME, callOf("report", "report.js", "report")],
    repair: "rm -f tests/report.test.js",
    weakens: true,
  },
  {
    name: "neutered-runner",
    kind: "a repair that makes the test runner always pass",
    files: MATH,
    workstreams: [RENAME, callOf("report", "report.js", "report")],
    repair: write("test.js", "process.exit(0);\n"),
    weakens: true,
  },
  {
    name: "edited-expectation",
    kind: "a repair that edits a test's expectation",
    files: MATH,
    workstreams: [RENAME, callOf("report", "report.js", "report")],
    repair: write("tests/report.test.js", 'require("assert").ok(true);\n'),
    weakens: true,
  },
  {
    name: "unrepairable",
    kind: "two migrations with one number, which the repair agent cannot fix",
    files: MIGRATIONS,
    workstreams: [migration("email", "email"), migration("phone", "phone")],
    repair: null,
  },
];

const taskId = (scenario: SemanticScenario, ws: ScenarioWorkstream) => `${scenario.name}_${ws.id}`;

/** The scenario's graph: one auto-merging workstream per side, each task gated by the test runner. */
export function scenarioGraph(scenario: SemanticScenario, options: { verify: boolean }): string {
  const lines = [
    `name: ${scenario.name}`,
    `max_concurrency: ${scenario.workstreams.length}`,
    "max_repair_attempts: 1",
    ...(options.verify ? [] : ["verify_integration: false"]),
    "workstreams:",
    ...scenario.workstreams.flatMap((w) => [`  - id: ${w.id}`, "    auto_merge: true"]),
    "tasks:",
    ...scenario.workstreams.flatMap((w) => [
      `  - id: ${taskId(scenario, w)}`,
      `    workstream_id: ${w.id}`,
      `    description: ${JSON.stringify(w.description)}`,
      `    completion_gate: ${GATE}`,
      "    max_gate_attempts: 1",
    ]),
  ];
  return `${lines.join("\n")}\n`;
}

/** The scripted model of every scenario: a task's edit, a repair's fix (or a useless note), by id. */
export function scenarioAgent(scenarios: SemanticScenario[] = SCENARIOS): Script {
  const edits = new Map(scenarios.flatMap((s) => s.workstreams.map((w) => [taskId(s, w), w.edit] as const)));
  const repairs = new Map(scenarios.map((s) => [s.name, s.repair]));
  const bash = (command: string, description: string) => ({
    tools: [{ name: "Bash", input: { command, description } }],
  });
  return (request) => {
    const prompt = promptOf(request);
    const done = toolResults(request).length;
    const repairing = /Repair `agentrelay\/([^/`]+)\//.exec(prompt);
    if (repairing) {
      const fix = repairs.get(repairing[1]!);
      if (done === 0) return bash(fix ?? "echo 'I do not see how to fix this' > REPAIR-NOTES.txt", "repair");
      return {
        text: fix ? "Made the new code use what the other workstream changed." : "I could not fix it.",
      };
    }
    const manifest = manifestFor(prompt);
    const edit = manifest ? edits.get(manifest.task.id) : undefined;
    if (!manifest || edit === undefined) return { text: "Nothing to do." };
    // One tool call: the edit and the hand-back (each model turn costs the CLI a round).
    const handBack = `agentrelay-summary --message ${JSON.stringify(`Did ${manifest.task.description}`)} && agentrelay-complete`;
    return done === 0 ? bash(`${edit} && ${handBack}`, "edit and hand back") : { text: "Done." };
  };
}

/** Whether the gate passes in `dir`. */
export const passes = (dir: string): boolean =>
  spawnSync("bash", ["-c", GATE], { cwd: dir, stdio: "ignore", timeout: WAIT_MS }).status === 0;

/**
 * How many trees of the target's history since `since` fail the gate: each commit the target took
 * (first parent: one per merge), checked out on its own and tested.
 */
export async function brokenOnTarget(repo: string, since: string, target = "main"): Promise<string[]> {
  const commits = (await git(repo, ["rev-list", "--first-parent", "--reverse", `${since}..${target}`]))
    .split("\n")
    .filter(Boolean);
  const broken: string[] = [];
  for (const commit of commits) {
    const dir = mkdtempSync(join(tmpdir(), "agentrelay-target-"));
    try {
      await git(repo, ["worktree", "add", "-q", "--detach", dir, commit]);
      if (!passes(dir))
        broken.push(`${commit.slice(0, 7)} ${await git(repo, ["log", "-1", "--format=%s", commit])}`);
    } finally {
      await gitRaw(repo, ["worktree", "remove", "--force", dir]);
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return broken;
}

/**
 * The test files that reached the target at some point of its history (added by a commit it holds,
 * the base's or a workstream's) and are gone from it now, or fail run on their own rather than through
 * the tree's runner (which a repair may have changed): what landed weakened.
 */
export async function weakenedOnTarget(repo: string, target = "main"): Promise<string[]> {
  const added = (
    await git(repo, ["log", target, "--format=", "--name-only", "--diff-filter=A", "--", "tests/"])
  )
    .split("\n")
    .filter(Boolean);
  const weakened: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), "agentrelay-target-"));
  try {
    await git(repo, ["worktree", "add", "-q", "--detach", dir, target]);
    for (const file of [...new Set(added)].sort()) {
      const here = await gitRaw(repo, ["cat-file", "-e", `${target}:${file}`]);
      if (here.code !== 0) weakened.push(`${file} is gone`);
      else if (spawnSync(process.execPath, [file], { cwd: dir, timeout: WAIT_MS }).status !== 0)
        weakened.push(`${file} fails`);
    }
  } finally {
    await gitRaw(repo, ["worktree", "remove", "--force", dir]);
    rmSync(dir, { recursive: true, force: true });
  }
  return weakened;
}

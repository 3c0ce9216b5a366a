import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.ts";
import { agentrelay, agentrelayWith, withStandIn } from "../support/cli.ts";
import { REPO_ROOT } from "../support/fixtures.ts";
import { tempRepo } from "../support/git.ts";
import { graphYaml } from "../support/graphs.ts";
import { GitRefStateStore } from "../../src/local/git-store.ts";

const dir = mkdtempSync(join(tmpdir(), "agentrelay-cli-"));
/** Temporary folders the tests made, removed at the end. */
const made: string[] = [dir];
afterAll(() => {
  for (const path of made) rmSync(path, { recursive: true, force: true });
});
const write = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
/**
 * `agentrelay ARGS...` in this process, its output as the binary prints it: for what the command says,
 * where the process is not what a test shows (each command keeps one test through the real binary).
 */
async function cli(...args: string[]) {
  let stdout = "";
  let stderr = "";
  const line = (text: string) => (text.endsWith("\n") ? text : `${text}\n`);
  const code = await main(args, { out: (t) => (stdout += line(t)), err: (t) => (stderr += line(t)) });
  return { code, stdout, stderr };
}

const good = write("good.yaml", graphYaml([{ id: "a" }, { id: "b", deps: ["a"] }]));
const bad = write(
  "bad.yaml",
  "name: g\ntasks:\n  - id: a\n    dependencies: [zz]\n    description: x\n  - id: b\n",
);

describe("agentrelay validate", () => {
  it("exits 0 when every file is valid", () => {
    expect(agentrelay("validate", good).code).toBe(0);
  });

  it("exits 1 and prints one FILE:LINE:COL: message line per error", () => {
    const { code, stdout } = agentrelay("validate", good, bad);
    expect(code).toBe(1);
    // Every independent problem, in one pass; what is fine is said on the same stream, in order.
    expect(stdout.trim().split("\n")).toEqual([
      `${good}: ok (agentrelay, 2 tasks)`,
      `${bad}:4:20: tasks[0].dependencies[0]: unknown dependency id 'zz'`,
      `${bad}:6:5: tasks[1]: task 'b' has role 'generic' and no description; the description is its whole assignment`,
    ]);
  });

  it("prints every error on one line, with unprintable characters escaped", async () => {
    const hostile = write(
      "hostile.yaml",
      'name: g\ntasks:\n  - {id: "a\\nb", description: x}\n  - {id: "c\\u202ed", description: x}\n  - {id: "n\\0x", description: x}\n',
    );
    const { code, stdout } = await cli("validate", hostile);
    expect(code).toBe(1);
    expect(stdout.trim().split("\n")).toEqual([
      `${hostile}:3:10: tasks[0].id: 'a\\nb' is not a safe id: use 1-80 letters, digits, '_', '-' or '.', starting with a letter or digit`,
      `${hostile}:4:10: tasks[1].id: 'c\\u{202e}d' is not a safe id: use 1-80 letters, digits, '_', '-' or '.', starting with a letter or digit`,
      // A NUL is refused as such (security case 77), beside every other error of the file.
      `${hostile}:5:10: tasks[2].id: may not contain a NUL character (no command, argument or environment can hold one)`,
    ]);
  });

  it("reports a template past its limits at its field, and goes on to the next file unharmed", () => {
    const hostile = write(
      "hostile-template.yaml",
      "name: w\nsubtasks:\n  s:\n    instructions: \"{{ 'x' * 1000000000 }}\"\n",
    );
    const fine = write("fine-template.yaml", 'name: w\nsubtasks:\n  s:\n    instructions: "{{ 2 * 3 }}"\n');
    const { code, stdout, stderr } = agentrelay("validate", hostile, fine);
    expect(code).toBe(1);
    expect(stdout.trim().split("\n")).toEqual([
      `${hostile}:4:19: subtasks.s.instructions: template error: the template needs more than 256 MB of memory (the limit)`,
      `${fine}: ok (cyberian, 1 task)`,
    ]);
    expect(stderr).toBe("");
  });

  it("suggests the nearest key for a mistyped one, however deep, and for several at once", async () => {
    const typos = write(
      "typos.yaml",
      "name: g\nmodle: x\ntasks:\n  - id: a\n    description: x\n    primary_agent: {modle: x, verbsity: y}\n",
    );
    expect((await cli("validate", typos)).stdout.trim().split("\n")).toEqual([
      `${typos}:2:1: contains unknown key(s): modle (did you mean \`model\`?)`,
      `${typos}:6:21: tasks[0].primary_agent: contains unknown key(s): modle (did you mean \`model\`?), verbsity`,
    ]);
  });

  it("exits 2 on a usage error", async () => {
    expect(agentrelay("validate").code).toBe(2);
    expect((await cli("frobnicate")).code).toBe(2);
    // Amounts are plain decimals within bounds: never hexadecimal, binary, octal or exponents.
    const graph = write("amounts.yaml", "name: g\nmax_cost_usd: 1\ntasks:\n  - id: a\n    description: x\n");
    for (const amount of ["+0x10", "+0b11", "+0o7", "+1e303", "+Infinity", "+1000001"]) {
      const refused = await cli("budget", graph, amount, "--repo", REPO_ROOT);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(
        `budget expects a plain decimal number of US dollars greater than 0 and at most 1000000, e.g. 5 or 0.50, got '${amount}'`,
      );
    }
  });
});

describe("agentrelay plan", () => {
  it("prints the plan as one JSON object with --json", () => {
    const { code, stdout } = agentrelay("plan", good, "--json");
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual({
      name: "g",
      dialect: "agentrelay",
      order: ["a", "b"],
      waves: [["a"], ["b"]],
      workstreams: [{ id: "default", tasks: ["a", "b"] }],
      overlaps: [],
    });
  });

  it("lists the tasks of different workstreams that may run at once on the same paths", async () => {
    const overlapping = write(
      "overlapping.yaml",
      graphYaml(
        [
          { id: "rename", ws: "left", extra: "tagged_paths: [{ path: src/, category: src }]" },
          { id: "call", ws: "right", extra: "tagged_paths: [{ path: src/calc.py, category: src }]" },
          { id: "docs", ws: "right", deps: ["call"] },
        ],
        [{ id: "left" }, { id: "right" }],
      ),
    );
    const { stdout } = await cli("plan", overlapping);
    expect(stdout).toContain(
      "Overlaps (tasks of different workstreams that may run at once and change the same paths; `overlaps: serialize` orders them):\n  `call` (right) and `rename` (left) both change `src/calc.py`\n",
    );
    expect(JSON.parse((await cli("plan", overlapping, "--json")).stdout).overlaps).toEqual([
      {
        tasks: ["call", "rename"],
        workstreams: ["right", "left"],
        paths: ["src/calc.py"],
        from: ["tagged", "tagged"],
        serialized: false,
      },
    ]);
  });

  it("prints a readable plan with a mermaid diagram", async () => {
    const { stdout } = await cli("plan", good);
    expect(stdout).toMatch(/^Graph g \(agentrelay, 2 tasks, 1 workstream\)\n/);
    expect(stdout).toContain("1. a  [default]");
    expect(stdout).toContain("```mermaid\nflowchart TD");
    expect(stdout).toContain("t0 --> t1");
  });

  it("reports errors like validate", async () => {
    expect((await cli("plan", bad)).code).toBe(1);
  });
});

describe("agentrelay render", () => {
  it("writes the three protocol files", () => {
    const out = join(dir, "render");
    const { code } = agentrelay("render", good, "b", "--attempt", "2", "--out", out);
    expect(code).toBe(0);
    expect(JSON.parse(readFileSync(join(out, "manifest.json"), "utf8")).execution).toEqual({
      attempt_num: 1,
      graph_name: "g",
    });
    expect(JSON.parse(readFileSync(join(out, "policies.json"), "utf8")).schema_version).toBe("1");
    expect(readFileSync(join(out, "instructions.md"), "utf8")).toContain("## Previous Attempts");
  });

  it("names a missing required cyberian param at its declaration", async () => {
    const workflow = write(
      "w.yaml",
      "name: w\nparams:\n  topic: {range: string, required: true}\nsubtasks:\n  s:\n    instructions: 'Study {{ topic }}'\n",
    );
    const missing = await cli("render", workflow, "s", "--out", join(dir, "w"));
    expect(missing.code).toBe(1);
    expect(missing.stdout).toContain(`${workflow}:3:3: params.topic: required param 'topic' has no value`);
    expect((await cli("render", workflow, "s", "--out", join(dir, "w"), "--param", "topic=owls")).code).toBe(
      0,
    );
    expect(readFileSync(join(dir, "w", "instructions.md"), "utf8")).toContain("Study owls");
  });

  it("refuses an unknown task (exit 1: the command line is fine, the graph has no such task), naming the nearest", async () => {
    const typo = await cli("render", good, "bb");
    expect(typo.code).toBe(1);
    expect(typo.stderr).toBe(`agentrelay: ${good}: no task 'bb' (did you mean \`b\`?)\n`);
    expect((await cli("render", good, "zzzz")).stderr).toBe(
      `agentrelay: ${good}: no task 'zzzz' (the graph has a, b)\n`,
    );
    expect((await cli("render", good, "b", "--attempt", "two")).code).toBe(2);
  });
});

describe("agentrelay schema", () => {
  it("prints the committed JSON Schema", () => {
    const printed = execFileSync(process.execPath, [join(REPO_ROOT, "bin/agentrelay.js"), "schema"], {
      encoding: "utf8",
    });
    expect(JSON.parse(printed)).toEqual(
      JSON.parse(readFileSync(join(REPO_ROOT, "schema/agentrelay-graph.schema.json"), "utf8")),
    );
  });
});

describe("agentrelay simulate", () => {
  const chain = write(
    "chain.yaml",
    graphYaml(
      [
        { id: "a", ws: "x" },
        { id: "b", deps: ["a"], ws: "y" },
        { id: "c", ws: "y" },
      ],
      [{ id: "x" }, { id: "y" }],
    ),
  );

  it("prints the documented JSON shape", () => {
    const { code, stdout } = agentrelay("simulate", chain, "--fail", "a", "--json");
    expect(code).toBe(0);
    const result = JSON.parse(stdout);
    expect(result.outcome).toBe("completed_with_failures");
    expect(result.tasks).toEqual({
      a: { status: "failed", attempts: 1, heldBy: "failed" },
      b: { status: "blocked", attempts: 0, heldBy: "blocked:task:a" },
      c: { status: "merged", attempts: 1 },
    });
    expect(result.workstreams).toEqual({ x: { status: "failed" }, y: { status: "failed" } });
    expect(result.events[0]).toEqual({ type: "dispatch", task: "a", workstream: "x", attempt: 1 });
    expect(result.events.map((e: { type: string }) => e.type)).toContain("task_blocked");
    expect(result.events.at(-1)).toEqual({ type: "run_finished" });
  });

  it("answers 'what if this task fails once?' with a readable timeline", async () => {
    const retrying = write("retry.yaml", graphYaml([{ id: "a" }], undefined, "max_task_attempts: 2"));
    const { code, stdout } = await cli("simulate", retrying, "--fail", "a:1", "--concern", "a");
    expect(code).toBe(0);
    expect(stdout).toContain("task_failed          a (attempt 1): simulated failure (will retry)");
    expect(stdout).toMatch(/a\s+merged\s+attempts 2/);
    expect(stdout).toContain("Outcome: waiting_for_review");
  });

  it("previews the status comment as it would stand on GitHub at the end of the run (--markdown)", async () => {
    const budgeted = write(
      "budgeted.yaml",
      graphYaml(
        [
          { id: "a", ws: "x" },
          { id: "b", deps: ["a"], ws: "x" },
          { id: "c", ws: "y" },
          { id: "d", deps: ["c"], ws: "y" },
        ],
        [{ id: "x" }, { id: "y" }],
        "max_concurrency: 2\nmax_task_attempts: 2\nmax_cost_usd: 1.5",
      ),
    );
    const { code, stdout } = await cli(
      "simulate",
      budgeted,
      "--fail",
      "a",
      "--cost-per-attempt",
      "0.5",
      "--markdown",
    );
    expect(code).toBe(0);
    expect(stdout).toMatch(
      /^<!-- agentrelay:status run=g\/1 -->\n### agentrelay run `g\/1`: waiting for budget and for you \(/,
    );
    expect(stdout).toContain(
      "- **Waiting for you**: budget spent: $1.50 of $1.50 for the run; 1 task to do waits for it.",
    );
    expect(stdout).toContain(
      "- **Waiting for you**: 1 task blocked by 1 failure: `a` failed (simulated failure), blocking 1.",
    );
    expect((await cli("simulate", budgeted, "--json", "--markdown")).code).toBe(2);
  });

  it("refuses a --fail for an unknown task, naming the nearest; a malformed one is a usage error", async () => {
    const demo = join(REPO_ROOT, "examples/demo.yaml");
    const typo = await cli("simulate", demo, "--fail", "dobule_calc");
    expect(typo.code).toBe(1);
    expect(typo.stderr).toBe("agentrelay: --fail: no task 'dobule_calc' (did you mean `double_calc`?)\n");
    expect((await cli("simulate", chain, "--concern", "nope")).code).toBe(1);
    expect((await cli("simulate", chain, "--conflict-integration", "xx")).stderr).toContain(
      "no workstream 'xx' (did you mean `x`?)",
    );
    const malformed = await cli("simulate", chain, "--fail", "a:x");
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain("--fail expects TASK or TASK:N, got 'a:x'");
    expect((await cli("simulate", chain, "--cost-per-attempt", "abc")).code).toBe(2);
  });
});

describe("agentrelay run", () => {
  it("names a graph file it cannot read as validate does, in one located line", () => {
    const missing = join(dir, "missing.yaml");
    const result = agentrelay("run", missing, "--repo", dir, "--scripted-model");
    expect(result.code).toBe(1);
    expect(result.stdout).toBe(`${missing}:1:1: cannot read the file: no such file\n`);
    expect(result.stderr).toBe("");
  });

  it("explains a credentials problem before anything runs", () => {
    const creds = write(
      "creds.yaml",
      "anthropic:\n  a: {type: api_key, key: x}\n  b: {type: api_key, key: y}\n",
    );
    const result = agentrelay("run", good, "--repo", dir, "--credentials", creds);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("several anthropic credentials (a, b)");
  });
});

describe("agentrelay run with a cyberian workflow", () => {
  const workflow = write(
    "loop.yaml",
    "name: loop\nparams:\n  topic: {range: string, required: true}\nsubtasks:\n  study:\n    instructions: 'Study {{ topic }}.'\n    loop_until: {status: DONE, message: 'Say DONE when done.'}\n",
  );

  it("names a missing required param before anything runs", () => {
    const result = agentrelay("run", workflow, "--repo", dir, "--scripted-model");
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`${workflow}:3:3: params.topic: required param 'topic' has no value`);
  });

  it("takes params from <workflow>.params.yaml beside the file and runs the loop to its status", async () => {
    const repo = await tempRepo();
    made.push(repo);
    writeFileSync(join(dir, "loop.params.yaml"), "topic: owls\n");
    // The params and the loop are the runner's: its agent is the tests' stand-in for Claude Code.
    const result = agentrelayWith(withStandIn(), "run", workflow, "--repo", repo, "--scripted-model");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/study\s+completed/);
  });
});

describe("the command line's page", () => {
  it("describes every command the binary knows", async () => {
    const table = readFileSync(join(REPO_ROOT, "docs/cli.md"), "utf8");
    const commands = (await cli("--help")).stdout
      .split("\n")
      .filter((l) => /^ {2}[a-z]/.test(l))
      .map((l) => l.trim().split(" ")[0]!);
    expect(commands.length).toBeGreaterThanOrEqual(11);
    for (const command of commands) expect(table).toMatch(new RegExp(`\`(agentrelay )?${command}[ \`]`));
  });
});

describe("the cyberian example beside the demo", () => {
  const example = join(REPO_ROOT, "examples/research-notes.yaml");

  it("takes its params from the params file beside it when rendered", async () => {
    const out = mkdtempSync(join(tmpdir(), "agentrelay-example-"));
    made.push(out);
    expect((await cli("render", example, "refine", "--out", out)).code).toBe(0);
    expect(readFileSync(join(out, "instructions.md"), "utf8")).toContain(
      "Improve the notes on the Fibonacci sequence in docs/fibonacci-notes.md",
    );
    const given = await cli("render", example, "outline", "--out", out, "--param", "topic=owls");
    expect(given.code).toBe(0);
    expect(readFileSync(join(out, "instructions.md"), "utf8")).toContain("Write an outline of notes on owls");
  });

  it("runs with the scripted model: each step in order, the loop to its status", async () => {
    const repo = await tempRepo();
    made.push(repo);
    // The example's steps and loop are the runner's: its agent is the tests' stand-in for Claude Code
    // (the README's demo below runs the real one).
    const result = agentrelayWith(withStandIn(), "run", example, "--repo", repo, "--scripted-model");
    expect(result.stdout).toMatch(/outline\s+completed/);
    expect(result.stdout).toMatch(/refine\s+completed/);
    expect(result.stdout).toContain("Run research-notes/1: succeeded");
    expect(result.code).toBe(0);
  });
});

describe("the README's quick start", () => {
  // The demo is `agentrelay run` of the embedded graph with the scripted model: run once, for the
  // README and for what a local run of the diamond must do (it was a second whole run in local/run).
  it("npm run demo runs the embedded graph to the end and shows main's history", async () => {
    const demo = spawnSync("npm", ["run", "demo"], { cwd: REPO_ROOT, encoding: "utf8" });
    expect(demo.stdout).toContain("Run demo-diamond/1: succeeded");
    // The scripted model's tokens are metered at list price, and nothing is charged: the report says so.
    expect(demo.stdout).toMatch(
      /\nSpent \$0\.\d+ \(metered: the scripted model's tokens at list price; no money was charged\)\n/,
    );
    expect(demo.stdout).toMatch(/ws_combined\s+merged\s+merged into main/);
    expect(demo.stdout).toMatch(/base_calc\s+running/);
    expect(demo.stdout).toMatch(/The work is on main in \S+:\n[\s\S]*Integrate workstream ws_combined/);
    const repo = /^Demo repository: (\S+)$/m.exec(demo.stdout)![1]!;
    made.push(repo);
    const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, encoding: "utf8" }).trim();
    expect(git("ls-tree", "-r", "--name-only", "main")).toContain("calc/combined.py");
    expect(demo.status).toBe(0);

    // Task merges into integration branches, integration into main.
    const { state } = (await new GitRefStateStore(repo).load("demo-diamond/1"))!;
    expect(state.outcome).toBe("succeeded");
    expect(Object.values(state.tasks).map((t) => t.status)).toEqual(["merged", "merged", "merged", "merged"]);
    const subjects = git("log", "--format=%s", "main").split("\n");
    expect(subjects.filter((s) => s.startsWith("Integrate workstream"))).toHaveLength(4);
    expect(subjects.filter((s) => s.startsWith("Merge task"))).toHaveLength(4);
    // double_calc and square_calc started only after ws_base merged into main.
    const timeline = state.timeline.map((e) => `${e.type}:${e.task ?? e.workstream}`);
    expect(timeline.indexOf("dispatch:double_calc")).toBeGreaterThan(
      timeline.indexOf("integration_merged:ws_base"),
    );
    // The run is recorded on its state ref; running again finds it finished and changes nothing.
    const ref = git("rev-parse", "refs/agentrelay/runs/demo-diamond/1");
    const again = agentrelay("run", join(repo, ".workflow/demo.yaml"), "--repo", repo, "--scripted-model");
    expect(again.stdout).toContain("Run demo-diamond/1: succeeded");
    expect(again.code).toBe(0);
    expect(git("rev-parse", "refs/agentrelay/runs/demo-diamond/1")).toBe(ref);
    expect(git("status", "--porcelain")).toBe("");
  });
});

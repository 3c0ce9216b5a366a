/**
 * The exit codes `agentrelay --help` lists, one test per row, through the real binary: a script can
 * tell a run that succeeded from one that failed, one that waits for the user, and a usage error.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { git } from "../../src/attempt/git.ts";
import { EXIT_CODES } from "../../src/cli/main.ts";
import { until } from "../../harness/patience.ts";
import { agentrelayWith, BIN, graphFile, withStandIn } from "../support/cli.ts";
import { REPO_ROOT } from "../support/fixtures.ts";
import { tempRepo } from "../support/git.ts";
import { graphYaml } from "../support/graphs.ts";

/** Its runs start the tests' stand-in for Claude Code: the exit codes are the command line's. */
const agentrelay = (...args: string[]) => agentrelayWith(withStandIn(), ...args);

const SAMPLE = join(REPO_ROOT, "templates/sample-graph.yaml");

describe("exit codes", () => {
  it("--help and each command's --help list exactly the codes below", () => {
    const rows = EXIT_CODES.map(([code, meaning]) => `  ${String(code).padEnd(4)} ${meaning}`).join("\n");
    expect(EXIT_CODES.map(([code]) => code)).toEqual([0, 1, 2, 3, 130]);
    expect(agentrelay("--help").stdout).toContain(`exit codes:\n${rows}\n`);
    expect(agentrelay("run", "--help").stdout).toContain(`exit codes:\n${rows}\n`);
    // The command line's page has the same table.
    const page = readFileSync(join(REPO_ROOT, "docs/cli.md"), "utf8");
    const table = [...page.matchAll(/^\| (\d+) +\| (.+?) +\|$/gm)].map((m) => [Number(m[1]), m[2]]);
    expect(table).toEqual(EXIT_CODES);
  });

  it("3 while the run waits for you (a merge), 3 from status too; 0 once it succeeded", async () => {
    const repo = await tempRepo();
    const waiting = agentrelay("run", SAMPLE, "--repo", repo, "--scripted-model");
    expect(waiting.stdout).toContain(
      "Run hello/1: waiting for you: merge agentrelay/hello/hello/integration",
    );
    expect(waiting.code).toBe(3);
    expect(agentrelay("status", SAMPLE, "--repo", repo).code).toBe(3);
    await git(repo, ["merge", "-q", "--no-edit", "agentrelay/hello/hello/integration"]);
    const done = agentrelay("run", SAMPLE, "--repo", repo, "--scripted-model");
    expect(done.stdout).toContain("Run hello/1: succeeded");
    expect(done.code).toBe(0);
    expect(agentrelay("status", SAMPLE, "--repo", repo).code).toBe(0);
    // A steering command the run refuses is a failure, though the run itself succeeded.
    const refused = agentrelay("retry", SAMPLE, "hello_note", "--repo", repo, "--scripted-model");
    expect(refused.stdout).toContain("refused: task 'hello_note' is merged");
    expect(refused.code).toBe(1);
  });

  it("1 for invalid input and for a run that finished without succeeding", async () => {
    const bad = graphFile("name: g\ntasks:\n  - id: a\n    dependencies: [zz]\n    description: x\n");
    expect(agentrelay("validate", bad).code).toBe(1);
    const repo = await tempRepo();
    const failing = graphFile(
      graphYaml(
        [{ id: "a", extra: 'completion_gate: "false"\nmax_gate_attempts: 1' }],
        undefined,
        "max_task_attempts: 1",
      ),
    );
    const failed = agentrelay("run", failing, "--repo", repo, "--scripted-model");
    expect(failed.stdout).toContain("Run g/1: completed_with_failures");
    expect(failed.code).toBe(1);
  });

  it("1 for input that does not fit what it names: a task the graph lacks, a folder that is no repository", async () => {
    const retry = agentrelay("retry", SAMPLE, "hello_nte", "--repo", await tempRepo());
    expect(retry.stderr).toBe("agentrelay: no task 'hello_nte' (did you mean `hello_note`?)\n");
    expect(retry.code).toBe(1);
    expect(agentrelay("budget", SAMPLE, "+1", "helo", "--repo", await tempRepo()).code).toBe(1);
    expect(agentrelay("render", SAMPLE, "nope").code).toBe(1);
    const nowhere = join(mkdtempSync(join(tmpdir(), "agentrelay-")), "nowhere");
    const init = agentrelay("init", "--repo", nowhere, "--action", "a/b@c", "--image", "d/e");
    expect(init.stderr).toBe(
      `agentrelay: --repo ${nowhere} is not a git repository: run \`git init\` there first, or point --repo at your repository\n`,
    );
    expect(init.code).toBe(1);
    expect(existsSync(nowhere)).toBe(false);
  });

  it("2 for a value of the wrong form, before anything runs", async () => {
    const repo = await tempRepo();
    const turns = agentrelay("run", SAMPLE, "--repo", repo, "--max-turns", "abc", "--scripted-model");
    expect(turns.code).toBe(2);
    expect(turns.stderr).toBe(
      "agentrelay: --max-turns expects a whole number from 1, got 'abc' (see `agentrelay run --help`)\n",
    );
    expect(await git(repo, ["for-each-ref", "refs/agentrelay/"])).toBe("");
    expect(agentrelay("run", SAMPLE, "--repo", repo, "--max-turns", "0").code).toBe(2);
  });

  it("2 for a usage error: a misspelled option gets the nearest one, not the parser's message", () => {
    const typo = agentrelay("run", SAMPLE, "--repo", ".", "--scripted-modle");
    expect(typo.code).toBe(2);
    expect(typo.stderr).toBe(
      "agentrelay: unknown option --scripted-modle (did you mean --scripted-model?) (see `agentrelay run --help`)\n",
    );
    expect(agentrelay("plan", SAMPLE, "--repo", ".").stderr).toBe(
      "agentrelay: unknown option --repo; `plan` takes --json (see `agentrelay plan --help`)\n",
    );
    expect(agentrelay("run", SAMPLE, "--repo").stderr).toBe(
      "agentrelay: --repo needs a value (see `agentrelay run --help`)\n",
    );
    expect(agentrelay("plan", SAMPLE, "--json=yes").stderr).toBe(
      "agentrelay: --json takes no value (see `agentrelay plan --help`)\n",
    );
    expect(agentrelay("frobnicate").code).toBe(2);
    expect(agentrelay("validate", SAMPLE, "--hlep").stderr).toBe(
      "agentrelay: unknown option --hlep (did you mean --help?) (see `agentrelay validate --help`)\n",
    );
    expect(agentrelay("--hlep").stderr).toBe(
      "agentrelay: unknown option --hlep (did you mean --help?) (see `agentrelay --help`)\n",
    );
    expect(agentrelay("simulte").stderr).toContain("unknown command 'simulte' (did you mean `simulate`?)");
  });

  it("130 when interrupted", async () => {
    const repo = await tempRepo();
    const graph = graphFile(graphYaml([{ id: "a", extra: `completion_gate: "sleep 60.${process.pid}"` }]));
    const child = spawn(process.execPath, [BIN, "run", graph, "--repo", repo, "--scripted-model"], {
      env: withStandIn(),
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk));
    const exit = new Promise<number | null>((done) => child.on("exit", done));
    await until(() => /a\s+running/.test(output), "the run starts");
    child.kill("SIGINT");
    expect(await exit).toBe(130);
    expect(output).toContain("interrupted; run the same command again to resume");
  });
});

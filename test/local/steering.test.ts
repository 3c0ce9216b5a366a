/**
 * A user's first local runs, through the real binary with the scripted model (its tools run by the
 * tests' stand-in for Claude Code: what is shown is the runner's): a repository that
 * cannot run says so in one line, a failed gate shows its output, and a run is steered (status,
 * retry, cancel, a new run) as slash commands steer one on GitHub.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { git } from "../../src/attempt/git.ts";
import { agentrelayWith, BIN, graphFile, withStandIn } from "../support/cli.ts";
import { tempRepo } from "../support/git.ts";
import { graphYaml } from "../support/graphs.ts";

const agentrelay = (...args: string[]) => agentrelayWith(withStandIn(), ...args);

const refs = async (repo: string, prefix: string) =>
  (await git(repo, ["for-each-ref", "--format=%(refname)", prefix])).split("\n").filter(Boolean);

describe("a repository that cannot run", () => {
  const graph = graphFile(graphYaml([{ id: "a" }]));

  it.each([
    [
      "a directory that does not exist",
      async () => join(tmpdir(), "agentrelay-nowhere"),
      /no such directory/,
    ],
    [
      "a directory that is not a git repository",
      async () => mkdtempSync(join(tmpdir(), "agentrelay-plain-")),
      /is not a git repository: run `git init`/,
    ],
    [
      "a repository with no commit",
      async () => {
        const dir = mkdtempSync(join(tmpdir(), "agentrelay-empty-"));
        await git(dir, ["init", "-q", "-b", "main"]);
        return dir;
      },
      /has no commit yet: .*git commit --allow-empty/,
    ],
    [
      "a repository without the base branch",
      async () => {
        const dir = mkdtempSync(join(tmpdir(), "agentrelay-master-"));
        await git(dir, ["init", "-q", "-b", "master"]);
        await git(dir, ["commit", "-q", "--allow-empty", "-m", "initial"]);
        return dir;
      },
      /workstream 'default' uses branch 'main', which .* does not have: create it \(git branch main master\)/,
    ],
  ])("%s gets one line that says what to do, and nothing is written", async (_, make, message) => {
    const repo = await make();
    const result = agentrelay("run", graph, "--repo", repo, "--scripted-model");
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(message);
    expect(existsSync(join(repo, ".agentrelay"))).toBe(false);
  });
});

describe("steering a local run", () => {
  it("a failed gate shows its output; status says what is left; retry runs the task again", async () => {
    const repo = await tempRepo();
    const ready = join(mkdtempSync(join(tmpdir(), "agentrelay-ready-")), "READY");
    const graph = graphFile(
      graphYaml(
        [
          {
            id: "a",
            extra: `completion_gate: "test -f ${ready} || { echo 'READY is missing'; exit 3; }"\nmax_gate_attempts: 1`,
          },
        ],
        undefined,
        "max_task_attempts: 1",
      ),
    );
    const first = agentrelay("run", graph, "--repo", repo, "--scripted-model");
    expect(first.code).toBe(1);
    expect(first.stdout).toMatch(/a\s+failed\s+attempts 1 .*Completion gate failed after 1 attempt/);
    expect(first.stdout).toContain("      | READY is missing\n      | [agentrelay] exit code 3");

    const status = agentrelay("status", graph, "--repo", repo);
    expect(status.code).toBe(1);
    expect(status.stdout).toMatch(/^Run g\/1: completed_with_failures/);
    expect(status.stdout).toContain("| READY is missing");

    writeFileSync(ready, "");
    const retried = agentrelay("retry", graph, "a", "--repo", repo, "--scripted-model");
    expect(retried.stdout).toContain("retrying 'a' (attempt 2)");
    expect(retried.stdout).toMatch(/a\s+merged\s+attempts 2/);
    // Without auto-merge the integration now waits for the user, and the run says so.
    expect(retried.stdout).toContain(
      "Run g/1: waiting for you: merge agentrelay/g/default/integration into main (git merge), then run again",
    );
    expect(retried.code).toBe(3);
    const refused = agentrelay("retry", graph, "a", "--repo", repo, "--scripted-model");
    expect(refused.stdout).toContain(
      "refused: task 'a' is merged; only failed or cancelled tasks can be retried",
    );
    expect(refused.code).toBe(1);
  });

  it("cancel reaches the live runner from another terminal and stops the attempt", async () => {
    const repo = await tempRepo();
    // A duration of its own, so that another test run's gate on this machine is not counted.
    const sleep = `sleep 3600.${process.pid}`;
    const graph = graphFile(
      graphYaml([
        { id: "slow", extra: `completion_gate: "${sleep}"` },
        { id: "after", deps: ["slow"] },
      ]),
    );
    const runner = spawn(process.execPath, [BIN, "run", graph, "--repo", repo, "--scripted-model"], {
      env: withStandIn(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    runner.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((done) => runner.on("close", done));
    // The attempt process records its process group when it starts; its gate keeps it live until stopped.
    while (!existsSync(join(repo, ".agentrelay/g/tasks/slow/processes-1")) && runner.exitCode === null)
      await new Promise((resolve) => setTimeout(resolve, 100));
    // status says the run goes on, once, and not also that it should be run again.
    const status = agentrelay("status", graph, "--repo", repo);
    expect(status.stdout).toMatch(
      new RegExp(
        `^Run g/1: running \\(a runner is live, pid ${runner.pid}; retry, cancel and reset go to it\\)\n`,
      ),
    );
    expect(status.stdout).not.toContain("run again");
    expect(status.code).toBe(3);
    const cancel = agentrelay("cancel", graph, "slow", "--repo", repo);
    expect(cancel.stdout.trim()).toBe("cancelled 'slow'");
    expect(cancel.code).toBe(0);
    // The slow gate never ends by itself: the runner exits because the cancel stopped it.
    expect(await exited).toBe(1);
    expect(output).toMatch(/slow\s+cancelled\s+attempts 1 .*\(cancelled\)/);
    expect(output).toMatch(/after\s+blocked/);
    // Nothing of the attempt is left running.
    expect(spawnSync("pgrep", ["-f", sleep]).status).toBe(1);
  });

  it("run --new-run starts over and keeps the previous run's branches", async () => {
    const repo = await tempRepo();
    const graph = graphFile(graphYaml([{ id: "a", ws: "x" }], [{ id: "x", autoMerge: true }]));
    expect(agentrelay("run", graph, "--repo", repo, "--scripted-model").code).toBe(0);
    const again = agentrelay("run", graph, "--repo", repo, "--scripted-model", "--new-run");
    expect(again.stdout).toContain("Run g/2: succeeded");
    expect(await refs(repo, "refs/agentrelay/runs/g/")).toEqual([
      "refs/agentrelay/runs/g/1",
      "refs/agentrelay/runs/g/2",
    ]);
    expect(await refs(repo, "refs/agentrelay/archive/g/1/")).toEqual([
      "refs/agentrelay/archive/g/1/agentrelay/g/a",
      "refs/agentrelay/archive/g/1/agentrelay/g/x/integration",
    ]);
    expect(agentrelay("status", graph, "--repo", repo).stdout).toMatch(/^Run g\/2: succeeded/);
  });

  it("run --new-run whose agent check fails changes nothing: the last run, its branches and its merge stay", async () => {
    const repo = await tempRepo();
    const graph = graphFile(graphYaml([{ id: "a", ws: "x" }], [{ id: "x" }]));
    expect(agentrelay("run", graph, "--repo", repo, "--scripted-model").code).toBe(3);
    const everyRef = () => git(repo, ["for-each-ref", "--format=%(objectname) %(refname)"]);
    const before = await everyRef();
    const again = agentrelay(
      "run",
      graph,
      "--repo",
      repo,
      "--scripted-model",
      "--new-run",
      "--claude",
      "/nowhere/claude",
    );
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("/nowhere/claude");
    expect(await everyRef()).toBe(before);
    expect(agentrelay("status", graph, "--repo", repo).stdout).toContain(
      "Run g/1: waiting for you: merge agentrelay/g/x/integration into main",
    );
    // What the run asks for can still be done.
    await git(repo, ["merge", "-q", "--no-edit", "agentrelay/g/x/integration"]);
  });

  it("a dirty checkout stops the auto-merge with a line that says what to do; run again merges", async () => {
    const repo = await tempRepo();
    mkdirSync(join(repo, "src"));
    writeFileSync(join(repo, "src/app.txt"), "v1\n");
    await git(repo, ["add", "."]);
    await git(repo, ["commit", "-q", "-m", "app"]);
    writeFileSync(join(repo, "src/app.txt"), "v2, not committed\n");
    const graph = graphFile(graphYaml([{ id: "a", ws: "x" }], [{ id: "x", autoMerge: true }]));
    const first = agentrelay("run", graph, "--repo", repo, "--scripted-model");
    expect(first.code).toBe(3);
    // The cause first: merging by hand would meet the same uncommitted changes.
    expect(first.stdout).toContain(
      `Run g/1: waiting for you: 'main' is checked out at ${repo} with uncommitted changes: commit or stash them, then run again`,
    );
    expect(first.stdout).toMatch(/x\s+to merge .*uncommitted changes: commit or stash them, then run again/);
    await git(repo, ["stash", "-q"]);
    const second = agentrelay("run", graph, "--repo", repo, "--scripted-model");
    expect(second.stdout).toContain("Run g/1: succeeded");
    expect(second.code).toBe(0);
    expect(await git(repo, ["log", "-1", "--format=%s", "main"])).toBe("Integrate workstream x");
  });
});

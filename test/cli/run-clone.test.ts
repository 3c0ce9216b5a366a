/**
 * `agentrelay run` as a person runs it, in a real clone: the binary, its report and its notes. A clone
 * with uncommitted changes is told, in one line, that the run starts from its last commit; the spend
 * of a run with the scripted model says what was metered and that nothing was charged; a run cleaned
 * away is followed by a new one.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { git } from "../../src/attempt/git.ts";
import { agentrelayWith, graphFile, withStandIn } from "../support/cli.ts";
import { tempRepo } from "../support/git.ts";

/** Its runs start the tests' stand-in for Claude Code: what is shown is the command line's. */
const agentrelay = (...args: string[]) => agentrelayWith(withStandIn(), ...args);

const ONE_TASK =
  "name: g\nworkstreams:\n  - id: w\n    auto_merge: true\ntasks:\n  - id: only\n    workstream_id: w\n    description: Write notes.\n";

/**
 * One clone's session, as a person has it (two runs of the agent in all, so that it stays cheap): a run
 * started with uncommitted changes, committed and run again to land, cleaned, and run once more.
 */
describe("agentrelay run in a clone", () => {
  it("notes uncommitted changes in one line and runs from HEAD; after clean, a new run, said in one line", async () => {
    const repo = await tempRepo();
    const commit = (message: string) =>
      git(repo, ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-am", message]);
    writeFileSync(join(repo, "calc.py"), "x = 1\n");
    await git(repo, ["add", "calc.py"]);
    await commit("calc");
    writeFileSync(join(repo, "calc.py"), "x = 2  # mine, not committed\n");
    const graph = graphFile(ONE_TASK);

    const dirty = agentrelay("run", graph, "--repo", repo, "--scripted-model");
    const notes = dirty.stderr.split("\n").filter((l) => l.startsWith("note: "));
    expect(notes).toEqual([
      `note: ${repo} has uncommitted changes; the run starts from its last commit (HEAD) without them: commit them first to include them`,
    ]);
    // The task ran from HEAD: the uncommitted line is in no commit of the run, and stays where it was.
    expect(await git(repo, ["show", "agentrelay/g/only:calc.py"])).toBe("x = 1");
    expect(readFileSync(join(repo, "calc.py"), "utf8")).toBe("x = 2  # mine, not committed\n");
    // Its workstream waits to land on main, which holds the changes.
    expect(dirty.stdout).toContain(
      `Run g/1: waiting for you: 'main' is checked out at ${repo} with uncommitted changes: commit or stash them, then run again`,
    );
    // The scripted model's tokens are metered at list price, as a real model's would be; nothing is charged.
    expect(dirty.stdout).toMatch(
      /\nSpent \$0\.\d*[1-9]\d* \(metered: the scripted model's tokens at list price; no money was charged\)\n/,
    );
    expect(dirty.code).toBe(3); // waiting (main.ts's EXIT_CODES)

    // Committed, the run goes on and lands (no note: nothing is uncommitted now).
    await commit("mine");
    const landed = agentrelay("run", graph, "--repo", repo, "--scripted-model");
    expect(landed.stdout).toContain("Run g/1: succeeded");
    expect(landed.stderr).not.toContain("note: ");

    // Cleaned, the graph runs as a new run, and says so; without a clean between, it shows the last.
    expect(agentrelay("clean", graph, "--repo", repo).code).toBe(0);
    const again = agentrelay("run", graph, "--repo", repo, "--scripted-model");
    expect(again.stdout).toContain("note: run g/1 had finished and was cleaned, so this is a new run, g/2\n");
    expect(again.stdout).toContain("Run g/2: succeeded");
    expect(again.code).toBe(0);
    expect(await git(repo, ["rev-parse", "--verify", "refs/agentrelay/runs/g/2"])).toMatch(/^[0-9a-f]{40}$/);
    const shown = agentrelay("run", graph, "--repo", repo, "--scripted-model");
    expect(shown.stdout).toContain("Run g/2: succeeded");
    expect(shown.stdout).not.toContain("note: ");
  });
});

/**
 * `agentrelay run` as a person runs it, in a real clone: the binary, its report and its notes. A clone
 * with uncommitted changes is told, in one line, that the run starts from its last commit; the spend
 * of a run with the scripted model says what was metered and that nothing was charged.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { git } from "../../src/attempt/git.ts";
import { agentrelay, graphFile } from "../support/cli.ts";
import { tempRepo } from "../support/git.ts";

const ONE_TASK =
  "name: g\nworkstreams:\n  - id: w\n    auto_merge: true\ntasks:\n  - id: only\n    workstream_id: w\n    description: Write notes.\n";

describe("agentrelay run in a clone with uncommitted changes", () => {
  it("says in one line that the run starts from HEAD without them, runs from HEAD and leaves them be", async () => {
    const repo = await tempRepo();
    writeFileSync(join(repo, "calc.py"), "x = 1\n");
    await git(repo, ["add", "calc.py"]);
    await git(repo, ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "calc"]);
    writeFileSync(join(repo, "calc.py"), "x = 2  # mine, not committed\n");
    const graph = graphFile(ONE_TASK);

    const result = agentrelay("run", graph, "--repo", repo, "--scripted-model");
    // The task ran; its workstream waits to land on main, which holds the changes.
    expect(result.stdout).toContain(
      `Run g/1: waiting for you: 'main' is checked out at ${repo} with uncommitted changes: commit or stash them, then run again`,
    );
    const notes = result.stderr.split("\n").filter((l) => l.startsWith("note: "));
    expect(notes).toEqual([
      `note: ${repo} has uncommitted changes; the run starts from its last commit (HEAD) without them: commit them first to include them`,
    ]);
    // The task's branch started from HEAD: the uncommitted line is in no commit of the run.
    expect(await git(repo, ["show", "agentrelay/g/only:calc.py"])).toBe("x = 1");
    expect(readFileSync(join(repo, "calc.py"), "utf8")).toBe("x = 2  # mine, not committed\n");
    // The scripted model's tokens are metered at list price, as a real model's would be; nothing is charged.
    expect(result.stdout).toMatch(
      /\nSpent \$0\.\d*[1-9]\d* \(metered: the scripted model's tokens at list price; no money was charged\)\n/,
    );
    expect(result.code).toBe(3); // waiting (main.ts's EXIT_CODES)
  });
});

describe("agentrelay run after agentrelay clean", () => {
  it("starts a new run, saying so in one line, instead of showing the cleaned one again", async () => {
    const repo = await tempRepo();
    const graph = graphFile(ONE_TASK);
    expect(agentrelay("run", graph, "--repo", repo, "--scripted-model").stdout).toContain(
      "Run g/1: succeeded",
    );
    expect(agentrelay("clean", graph, "--repo", repo).code).toBe(0);

    const again = agentrelay("run", graph, "--repo", repo, "--scripted-model");
    expect(again.stdout).toContain("note: run g/1 had finished and was cleaned, so this is a new run, g/2\n");
    expect(again.stdout).toContain("Run g/2: succeeded");
    expect(again.code).toBe(0);
    expect(await git(repo, ["rev-parse", "--verify", "refs/agentrelay/runs/g/2"])).toMatch(/^[0-9a-f]{40}$/);
    // Without a clean between them, running again resumes (and shows) the finished run, as before.
    const resumed = agentrelay("run", graph, "--repo", repo, "--scripted-model");
    expect(resumed.stdout).toContain("Run g/2: succeeded");
    expect(resumed.stdout).not.toContain("note: ");
  });
});

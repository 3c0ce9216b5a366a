/**
 * Two workstreams change the same lines of one file in parallel. The first merges into main; the
 * second's merge conflicts, and a resolution attempt (the scripted model keeping both sides, its
 * tools run by the tests' stand-in for Claude Code: the resolution is the runner's) merges main into
 * its integration branch and commits; both land in main. And a task PR whose integration branch
 * moved under it is resolved on the task branch the same way.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { git } from "../../src/attempt/git.ts";
import { GitRefStateStore } from "../../src/local/git-store.ts";
import { withStandIn } from "../support/cli.ts";
import { REPO_ROOT } from "../support/fixtures.ts";
import { tempRepo } from "../support/git.ts";

const BIN = join(REPO_ROOT, "bin/agentrelay.js");

const GRAPH = (resolutions: number) => `name: g
max_concurrency: 2
max_resolution_attempts: ${resolutions}
workstreams:
  - id: left
    auto_merge: true
  - id: right
    auto_merge: true
tasks:
  - id: a
    workstream_id: left
    description: Greet from the left in shared.txt.
    tagged_paths: [{ path: shared.txt, category: src }]
  - id: b
    workstream_id: right
    description: Greet from the right in shared.txt.
    tagged_paths: [{ path: shared.txt, category: src }]
    completion_gate: test -s shared.txt
`;

function run(graph: string, repo: string) {
  const result = spawnSync(process.execPath, [BIN, "run", graph, "--repo", repo, "--scripted-model"], {
    encoding: "utf8",
    env: withStandIn(),
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function graphFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), "agentrelay-graph-")), "g.yaml");
  writeFileSync(file, text);
  return file;
}

describe("conflicts between parallel workstreams, locally", () => {
  it("an agent resolves the second workstream's conflict with main, and both intents land", async () => {
    const repo = await tempRepo();
    const result = run(graphFile(GRAPH(2)), repo);
    expect(result.stderr).toBe("");
    expect(result.stdout).toMatch(/Run g\/1: succeeded/);
    expect(result.code).toBe(0);
    // What the terminal shows: the resolution as it starts and ends, and in the report.
    expect(result.stdout).toMatch(/ (left|right) \(integration\) +resolving conflicts \(resolution 1\)\n/);
    expect(result.stdout).toMatch(/ (left|right) \(integration\) +resolution 1 succeeded\n/);
    expect(result.stdout).toMatch(
      /\n {6}conflicts in shared\.txt: 1 resolution, \$\d\.\d{2,4}, the last succeeded\n/,
    );
    const shared = await git(repo, ["show", "main:shared.txt"]);
    expect(shared).toContain("written for task a");
    expect(shared).toContain("written for task b");
    expect(shared).not.toMatch(/^(<{7}|={7}|>{7})/m);
    const state = (await new GitRefStateStore(repo).load("g/1"))!.state;
    const [first, second] = ["left", "right"].map((w) => state.workstreams[w]!);
    const resolved = first!.conflict ?? second!.conflict;
    expect(resolved).toMatchObject({ files: ["shared.txt"], resolutions: [{ n: 1, outcome: "succeeded" }] });
    expect(resolved!.resolutions[0]!.costMicros).toBeGreaterThan(0);
    expect(state.timeline.filter((e) => e.type === "resolution")).toHaveLength(1);
    // A merge, never a rewrite: main's history keeps both workstreams' merges and the resolution.
    const log = await git(repo, ["log", "--format=%s", "main"]);
    expect(log).toMatch(/Integrate workstream left/);
    expect(log).toMatch(/Integrate workstream right/);
    expect(log).toMatch(/Merge branch 'main' into agentrelay\/g\/(left|right)\/integration/);
  });

  it("with resolution off, the conflict waits for a person, and says which file", async () => {
    const repo = await tempRepo();
    const result = run(graphFile(GRAPH(0)), repo);
    // Not finished: it waits for a person (exit code 3).
    expect(result.code).toBe(3);
    expect(result.stdout).toMatch(
      /merge `main` into `agentrelay\/g\/(left|right)\/integration` by hand: they conflict in `shared\.txt` \(resolution is off, `max_resolution_attempts: 0`\)/,
    );
  });

  it("a task PR whose integration branch moved under it is resolved on the task branch, then merges", async () => {
    const repo = await tempRepo();
    const integration = "refs/heads/agentrelay/solo/ws/integration";
    // The task's gate plays a person who commits shared.txt to the integration branch meanwhile (once:
    // it runs again in the resolution, where the branch already has the file).
    const person = [
      `git cat-file -e ${integration}:shared.txt 2>/dev/null ||`,
      `git update-ref ${integration} $(git -c user.name=person -c user.email=person@example.com commit-tree`,
      `-p ${integration} -m "a person's shared.txt" $( (git ls-tree ${integration};`,
      `printf '100644 blob %s\\tshared.txt\\n' $(echo person-line | git hash-object -w --stdin)) | git mktree))`,
    ].join(" ");
    const graph = `name: solo
workstreams:
  - id: ws
    auto_merge: true
tasks:
  - id: t
    workstream_id: ws
    description: Greet in shared.txt.
    tagged_paths: [{ path: shared.txt, category: src }]
    completion_gate: ${JSON.stringify(person)}
`;
    const result = run(graphFile(graph), repo);
    expect(result.stderr).toBe("");
    expect(result.stdout).toMatch(/Run solo\/1: succeeded/);
    const state = (await new GitRefStateStore(repo).load("solo/1"))!.state;
    expect(state.tasks.t!.conflict).toMatchObject({
      files: ["shared.txt"],
      resolutions: [{ n: 1, outcome: "succeeded" }],
    });
    const shared = await git(repo, ["show", "main:shared.txt"]);
    expect(shared).toContain("person-line");
    expect(shared).toContain("written for task t");
    expect(await git(repo, ["log", "--format=%s", "agentrelay/solo/t"])).toMatch(
      /Merge branch 'agentrelay\/solo\/ws\/integration' into agentrelay\/solo\/t/,
    );
  });
});

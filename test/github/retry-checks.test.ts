/**
 * Without a hosted app, a task job pushes with its workflow's GITHUB_TOKEN, for which GitHub starts
 * no workflow. A retried attempt updates an open task PR that way, so its CI would not run on the new
 * work. Acting as a registered app, the orchestrator moves the branch to a commit of the same tree
 * on top of the job's (a push by the app, which starts CI) before it merges: once per attempt, and
 * never with GITHUB_TOKEN alone (whose pushes start nothing either) or with a hosted app (whose job
 * pushes as the app).
 */
import { Octokit } from "@octokit/rest";
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/engine.ts";
import { DEFAULT_CONFIG, type AppConfig } from "../../src/github/client.ts";
import { GitHubEffects } from "../../src/github/effects.ts";
import { type HostedRun, newMeta } from "../../src/github/hosted-run.ts";
import { FakeGitHub } from "../../harness/fake-github.ts";
import { graphOf } from "../support/graphs.ts";

beforeEach(() => nock.disableNetConnect());
afterEach(() => {
  nock.cleanAll();
  nock.enableNetConnect();
});

const graph = graphOf([{ id: "a" }]);
const engine = createEngine(graph);
const BRANCH = "agentrelay/g/a";

/** The run with task a's PR open after `attempt` attempts, the last of which pushed `sha`. */
function runAfter(attempt: number, sha: string): HostedRun {
  const { state } = engine.start(0);
  const record = { ...state.tasks.a!, status: "pr_open" as const, attempt, pr: { number: 7, url: "u" } };
  record.attempts = Array.from({ length: attempt }, (_, i) => ({
    n: i + 1,
    dispatchedAt: 0,
    deadline: 1,
    startedAt: 0,
    outcome: "succeeded" as const,
    reason: null,
    costMicros: 0,
    turns: 1,
    pushedSha: i + 1 === attempt ? sha : null,
    gates: [],
  }));
  return {
    ...state,
    tasks: { a: record },
    source: { path: "g.yaml", commit: "c", branch: "main", text: "" },
    github: newMeta(),
  } as unknown as HostedRun;
}

function effectsFor(config: Partial<AppConfig>) {
  const github = new FakeGitHub();
  github.mount();
  github.commit("main", { "README.md": "hi\n" });
  github.branches.set(BRANCH, github.branches.get("main")!);
  const pushed = github.commit(BRANCH, { "a.txt": "attempt 2\n" }, "a: attempt 2");
  github.openPull(7, BRANCH, "agentrelay/g/default/integration");
  const octokit = new Octokit({ auth: "t", request: { retries: 0 } });
  const effects = new GitHubEffects({
    octokit,
    owner: "octo",
    repo: "demo",
    defaultBranch: "main",
    config: { ...DEFAULT_CONFIG, ...config },
    now: () => 0,
    log: () => undefined,
  });
  const merge = { type: "merge_task_pr" as const, key: "k", task: "a", pr: { number: 7, url: "u" } };
  return { github, pushed, merge: (run: HostedRun) => effects.repeatable(merge, run, engine) };
}

describe("a retried task PR without a hosted app", () => {
  it("is moved by the registered app before it merges, so that CI runs on the new work, once", async () => {
    const { github, pushed, merge } = effectsFor({ workflow: { token: "app" } });
    await merge(runAfter(2, pushed));
    expect(github.commitsMade).toHaveLength(1);
    expect(github.commitsMade[0]).toMatchObject({
      parents: [pushed],
      message: expect.stringContaining("Run the checks on attempt 2 of a"),
    });
    expect(github.refUpdates[0]).toEqual({ branch: BRANCH, sha: github.commitsMade[0]!.sha });
    // The same tree: the app's commit changes no file.
    expect(github.file(BRANCH, "a.txt")).toBe("attempt 2\n");
    await merge(runAfter(2, pushed));
    expect(github.commitsMade).toHaveLength(1);
  });

  it("is left as it is for a first attempt, with GITHUB_TOKEN alone, and with a hosted app", async () => {
    for (const [config, attempt] of [
      [{ workflow: { token: "app" as const } }, 1],
      [{ workflow: { token: "github_token" as const } }, 2],
      [{}, 2],
    ] as const) {
      const { github, pushed, merge } = effectsFor(config);
      await merge(runAfter(attempt, pushed));
      expect(github.commitsMade).toEqual([]);
      nock.cleanAll();
    }
  });
});

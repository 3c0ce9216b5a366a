/**
 * Whole graphs end to end (the real app, the bundled Action, the scripted model, a bare repository
 * behind a loopback GitHub): the behaviours people rely on. What they show is the app's and the
 * Action's, so the jobs' agent is the tests' stand-in for Claude Code, or the jobs are scripted; the
 * real CLI's whole loop is test/e2e/run.test.ts.
 * Assertions are on the bare repository's history, the PRs, the check runs and the status comment.
 */
import { afterEach, describe, expect, it } from "vitest";
import { e2eAgent } from "../../harness/e2e-agent.ts";
import { OVERLAP } from "../../harness/graphs.ts";
import { type Standin, startStandin } from "../../harness/standin.ts";
import type { RunState } from "../../src/engine/types.ts";

let standin: Standin | undefined;
afterEach(async () => {
  await standin?.close();
  standin = undefined;
});

const status = (s: Standin) => s.gh.comments.find((c) => c.body.includes("agentrelay:status"))!.body;

describe("end-to-end scenarios", () => {
  // What the app decides needs no agent: these run scripted jobs (each commits its task's note and
  // reports as the Action does); the Action with the real Claude Code is kept below for gates,
  // concerns, cancelling a running job and resolutions, which only a real job shows.
  it("parent and child workstreams: the child starts once the parent's integration PR is open", async () => {
    standin = await startStandin({ script: e2eAgent(), jobs: "scripted" });
    await standin.push({
      ".workflow/family.yaml": `name: family
workstreams:
  - id: parent
    auto_merge: true
  - id: child
    parent_workstream_id: parent
    auto_merge: true
tasks:
  - id: p1
    workstream_id: parent
    description: parent work
  - id: c1
    workstream_id: child
    description: child work
`,
    });
    await standin.idle();
    expect(standin.gh.state("family/1").outcome).toBe("succeeded");
    const log = standin.git("log", "--reverse", "--format=%s", "main").split("\n");
    expect(log.indexOf("Integrate workstream parent")).toBeGreaterThan(-1);
    expect(log.indexOf("Integrate workstream child")).toBeGreaterThan(
      log.indexOf("Integrate workstream parent"),
    );
    expect(standin.git("show", "main:notes/c1.md")).toBe("task c1, attempt 1");
  });

  it("a task that fails its gate succeeds on the retry, continuing from its branch", async () => {
    standin = await startStandin({ script: e2eAgent(), agent: "stand-in" });
    await standin.push({
      ".workflow/gated.yaml": `name: gated
max_task_attempts: 2
workstreams:
  - id: ws
    auto_merge: true
tasks:
  - id: g
    workstream_id: ws
    description: passes its gate on the second attempt
    completion_gate: git log --format=%s | grep -q 'g. attempt 1'
    max_gate_attempts: 1
`,
    });
    await standin.idle();
    const state = standin.gh.state("gated/1") as unknown as {
      outcome: string;
      tasks: { g: { attempts: { outcome: string; gates: { passed: boolean }[] }[] } };
    };
    expect(state.outcome).toBe("succeeded");
    expect(state.tasks.g.attempts.map((a) => [a.outcome, a.gates.map((x) => x.passed)])).toEqual([
      ["failed", [false]],
      ["succeeded", [true]],
    ]);
    expect(standin.git("show", "main:notes/g.md")).toBe("task g, attempt 1\ntask g, attempt 2");
    // Before its integration PR merged, the gate ran again on the tree that landed.
    expect(standin.gh.checkRuns).toMatchObject([
      { name: "agentrelay / g", conclusion: "success" },
      { name: "agentrelay / verify-integration@ws", conclusion: "success" },
    ]);
  });

  it("a failure blocks its dependents while an unrelated workstream finishes", async () => {
    standin = await startStandin({
      script: e2eAgent(),
      jobs: "scripted",
      scriptedOutcome: (task) => (task === "broken" ? "failed" : "succeeded"),
    });
    await standin.push({
      ".workflow/mixed.yaml": `name: mixed
max_concurrency: 2
workstreams:
  - id: ws_bad
    auto_merge: true
  - id: ws_good
    auto_merge: true
tasks:
  - id: broken
    workstream_id: ws_bad
    description: gives up
  - id: after_broken
    workstream_id: ws_bad
    dependencies: [broken]
    description: never runs
  - id: fine
    workstream_id: ws_good
    description: unrelated
`,
    });
    await standin.idle();
    const state = standin.gh.state("mixed/1");
    expect(state.outcome).toBe("completed_with_failures");
    expect(state.tasks.broken!.status).toBe("failed");
    expect(state.tasks.after_broken!.status).toBe("blocked");
    expect(state.tasks.fine!.status).toBe("merged");
    expect(standin.git("show", "main:notes/fine.md")).toBe("task fine, attempt 1");
    expect(standin.gh.dispatches.map((d) => d.inputs.task).sort()).toEqual(["broken", "fine"]);
    expect(status(standin)).toContain("`broken` failed (scripted failure), blocking 1");
  });

  it("a design concern leaves the integration PR open for review", async () => {
    standin = await startStandin({ script: e2eAgent(() => "concern"), agent: "stand-in" });
    await standin.push({
      ".workflow/careful.yaml":
        "name: careful\nworkstreams:\n  - id: ws\n    auto_merge: true\ntasks:\n  - id: t\n    workstream_id: ws\n    description: raises a concern\n",
    });
    await standin.idle();
    const integration = standin.gh.pulls.find((p) => p.head === "agentrelay/careful/ws/integration")!;
    expect(integration.state).toBe("open");
    expect(integration.body).toContain("## Concerns\n### t\n- the interface needs a second look");
    expect(standin.git("log", "--format=%s", "main")).not.toContain("Integrate workstream ws");
    // The status comment is mirrored on the open integration PR.
    expect(
      standin.gh.comments.some((c) => c.issue === integration.number && c.body.includes("agentrelay:status")),
    ).toBe(true);
  });

  it("slash commands: retry a failed task, cancel a running one", async () => {
    standin = await startStandin({
      script: e2eAgent((task, attempt) =>
        task === "flaky" ? (attempt === 1 ? "give-up" : "complete") : "slow",
      ),
      agent: "stand-in",
    });
    await standin.push({
      ".workflow/steer.yaml": `name: steer
max_concurrency: 2
workstreams:
  - id: ws_a
    auto_merge: true
  - id: ws_b
tasks:
  - id: flaky
    workstream_id: ws_a
    description: fails once
  - id: sleepy
    workstream_id: ws_b
    description: takes its time
`,
    });
    // flaky fails its first attempt while sleepy is still running.
    await standin.until(() => standin!.gh.state("steer/1").tasks.flaky!.status === "failed");
    const issue = standin.gh.issues[0]!.number;
    await standin.comment(issue, "/agentrelay retry flaky");
    await standin.comment(issue, "/agentrelay cancel sleepy");
    await standin.idle();
    const state = standin.gh.state("steer/1");
    expect(state.tasks.flaky!.status).toBe("merged");
    expect(state.tasks.sleepy!.status).toBe("cancelled");
    expect(standin.git("show", "main:notes/flaky.md")).toBe("task flaky, attempt 1\ntask flaky, attempt 2");
    expect(
      standin.gh.workflowRuns.get(standin.gh.dispatches.find((d) => d.inputs.task === "sleepy")!.runId)!
        .conclusion,
    ).toBe("cancelled");
    expect(standin.gh.reactions.map((r) => r.content)).toEqual(["eyes", "eyes"]);
  });
});

describe("parallel workstreams that change the same lines", () => {
  it("resolves the integration PR's conflict with a resolution job, and both intents reach main", async () => {
    standin = await startStandin({ script: e2eAgent(undefined, () => "notes/shared.md"), agent: "stand-in" });
    await standin.push({
      ".workflow/overlap.yaml": OVERLAP,
    });
    await standin.idle();
    const state = standin.gh.state("overlap/1") as unknown as RunState;
    expect(state.outcome).toBe("succeeded");
    // The workstream that merged second conflicted; its resolution ran as the bundled Action.
    const resolutions = standin.gh.dispatches.filter((d) => d.inputs.task!.startsWith("resolve-"));
    expect(resolutions).toHaveLength(1);
    const second = resolutions[0]!.inputs.task!.slice("resolve-integration@".length);
    expect(state.workstreams[second]!.conflict!.resolutions).toMatchObject([
      { n: 1, outcome: "succeeded", job: String(resolutions[0]!.runId) },
    ]);
    expect(standin.gh.workflowRuns.get(resolutions[0]!.runId)!.conclusion).toBe("success");
    // GitHub answered the first merge as it does a conflict (405, mergeable_state dirty).
    const pr = standin.gh.pulls.find((p) => p.head === `agentrelay/overlap/${second}/integration`)!;
    expect(pr.conflict).toBe(true);
    expect(pr.merged).toBe(true);
    // Both intents are in main, merged (not rebased): the resolution is a merge commit on the branch.
    expect(standin.git("show", "main:notes/shared.md").split("\n").sort()).toEqual([
      "task a, attempt 1",
      "task b, attempt 1",
    ]);
    const parents = standin.git("log", "-1", "--format=%P", `agentrelay/overlap/${second}/integration`);
    expect(parents.split(" ")).toHaveLength(2);
    // One more attempt in the timeline, with its own check run.
    expect(state.timeline.map((e) => e.type)).toContain("resolution");
    expect(standin.gh.checkRuns.filter((c) => c.name.includes("resolve-"))).toMatchObject([
      { name: `agentrelay / resolve-integration@${second}`, conclusion: "success" },
    ]);
  });
});

describe("a task PR whose integration branch moved under it", () => {
  it("is resolved by a resolution job on the task branch, then merges", async () => {
    let moved = false;
    standin = await startStandin({
      script: e2eAgent(undefined, () => "notes/shared.md"),
      agent: "stand-in",
      // A person commits to the integration branch as the task's PR is opened, changing the lines the
      // task changed.
      fault: (call) => {
        const taskPr = (call.body as { head?: string } | null)?.head === "agentrelay/solo/t";
        if (!moved && call.method === "POST" && /\/pulls$/.test(call.path) && taskPr) {
          moved = true;
          standin!.gh.commit(
            "agentrelay/solo/ws/integration",
            { "notes/shared.md": "a person's line\n" },
            "note",
          );
        }
        return null;
      },
    });
    await standin.push({
      ".workflow/solo.yaml":
        "name: solo\nworkstreams:\n  - id: ws\n    auto_merge: true\ntasks:\n  - id: t\n    workstream_id: ws\n    description: note t\n",
    });
    await standin.idle();
    const state = standin.gh.state("solo/1") as unknown as RunState;
    expect(state.outcome).toBe("succeeded");
    expect(standin.gh.dispatches.map((d) => d.inputs.task)).toEqual(["t", "resolve-pr@t"]);
    expect(state.tasks.t!.conflict!.resolutions).toMatchObject([{ n: 1, outcome: "succeeded" }]);
    expect(standin.git("show", "main:notes/shared.md").split("\n").sort()).toEqual([
      "a person's line",
      "task t, attempt 1",
    ]);
  });
});

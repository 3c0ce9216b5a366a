import { describe, expect, it } from "vitest";
import { rootCauses } from "../../src/engine/blocking.ts";
import { createEngine } from "../../src/engine/engine.ts";
import type { EngineEffect, EngineEvent, RunState } from "../../src/engine/types.ts";
import { buildPlan } from "../../src/plan/plan.ts";
import { graphOf, type TaskSpec, type WorkstreamSpec } from "../support/graphs.ts";

/** An event without its time (the driver stamps it). */
type Fact = EngineEvent extends infer E
  ? E extends EngineEvent
    ? Omit<E, "at"> & { at?: number }
    : never
  : never;

/** Drives the pure engine by hand: send facts, inspect state and effects. */
function driver(tasks: TaskSpec[], workstreams?: WorkstreamSpec[], head = "") {
  const engine = createEngine(graphOf(tasks, workstreams, head), { attemptTimeoutMs: 1000 });
  let { state, effects } = engine.start(0);
  let clock = 0;
  const d = {
    get state(): RunState {
      return state;
    },
    get effects(): EngineEffect[] {
      return effects;
    },
    send(event: Fact) {
      const decision = engine.decide(state, { ...event, at: event.at ?? ++clock } as EngineEvent);
      state = decision.state;
      effects = decision.effects;
      return d;
    },
    types: () =>
      effects.map((e) => `${e.type}:${"task" in e ? e.task : "workstream" in e ? e.workstream : ""}`),
    /** Runs a task to a merged PR: prepare its workstream if asked, report success, open and merge the PR. */
    finish(task: string, attempt = 1, pr = 10) {
      return d
        .send({ type: "job_succeeded", task, attempt })
        .send({ type: "task_pr_opened", task, pr: { number: pr, url: `u/${pr}` } })
        .send({ type: "task_pr_merged", task, pr: { number: pr, url: `u/${pr}` } });
    },
  };
  return d;
}

describe("engine", () => {
  it("prepares a workstream before dispatching into it, with deterministic keys", () => {
    const d = driver([{ id: "a" }]);
    expect(d.effects.map((e) => e.key)).toEqual(["g/1/ws/default/prepare", "g/1/status"]);
    d.send({ type: "workstream_prepared", workstream: "default" });
    expect(d.effects[0]).toEqual({ type: "dispatch", key: "g/1/a/1", task: "a", attempt: 1 });
  });

  it("ignores duplicated events: the state keeps its version and no effect repeats", () => {
    const d = driver([{ id: "a" }]).send({ type: "workstream_prepared", workstream: "default" });
    d.send({ type: "job_succeeded", task: "a", attempt: 1, summary: "done" });
    const before = d.state;
    expect(d.types()).toContain("open_task_pr:a");
    d.send({ type: "job_succeeded", task: "a", attempt: 1, summary: "done" });
    expect(d.state).toBe(before);
    expect(d.effects).toEqual([]);
    d.send({ type: "workstream_prepared", workstream: "default" });
    expect(d.state).toBe(before);
  });

  it("ignores reports about an attempt that is not the current one", () => {
    const d = driver([{ id: "a" }], undefined, "max_task_attempts: 3").send({
      type: "workstream_prepared",
      workstream: "default",
    });
    d.send({ type: "job_failed", task: "a", attempt: 1, reason: "gate failed" });
    expect(d.types()).toContain("dispatch:a");
    const seq = d.state.seq;
    d.send({ type: "job_failed", task: "a", attempt: 1, reason: "late duplicate" });
    d.send({ type: "job_succeeded", task: "a", attempt: 1 });
    expect(d.state.seq).toBe(seq);
    expect(d.state.tasks.a).toMatchObject({ status: "running", attempt: 2 });
  });

  it("binds an attempt to the job dispatched for it: another job cannot start it, and nobody starts it twice", () => {
    const d = driver([{ id: "a" }]).send({ type: "workstream_prepared", workstream: "default" });
    d.send({ type: "job_dispatched", task: "a", attempt: 1, job: "101" });
    expect(d.state.tasks.a!.attempts[0]!.job).toBe("101");
    expect(d.effects).toEqual([]); // bookkeeping: no status update
    const seq = d.state.seq;
    d.send({ type: "job_started", task: "a", attempt: 1, job: "202" });
    expect(d.state.seq).toBe(seq);
    expect(d.state.tasks.a!.attempts[0]!.startedAt).toBeNull();
    d.send({ type: "job_started", task: "a", attempt: 1, job: "101" });
    expect(d.state.tasks.a!.attempts[0]!.startedAt).not.toBeNull();
    const started = d.state.seq;
    d.send({ type: "job_started", task: "a", attempt: 1, job: "101" });
    expect(d.state.seq).toBe(started);
  });

  it("keeps what a failed attempt spent, as its job reported it", () => {
    const d = driver([{ id: "a" }], undefined, "max_task_attempts: 2").send({
      type: "workstream_prepared",
      workstream: "default",
    });
    d.send({
      type: "job_failed",
      task: "a",
      attempt: 1,
      reason: "gate failed",
      costMicros: 420_000,
      turns: 7,
    });
    expect(d.state.tasks.a!.attempts[0]).toMatchObject({ outcome: "failed", costMicros: 420_000, turns: 7 });
    expect(d.state.tasks.a).toMatchObject({ status: "running", attempt: 2 });
  });

  it("converges when the merge is reported before the job's success", () => {
    const pr = { number: 7, url: "u/7" };
    const early = driver([{ id: "a" }, { id: "b", deps: ["a"] }]).send({
      type: "workstream_prepared",
      workstream: "default",
    });
    early
      .send({ type: "task_pr_merged", task: "a", pr })
      .send({ type: "job_succeeded", task: "a", attempt: 1, concerns: ["x"], summary: "s" });
    const normal = driver([{ id: "a" }, { id: "b", deps: ["a"] }]).send({
      type: "workstream_prepared",
      workstream: "default",
    });
    normal
      .send({ type: "job_succeeded", task: "a", attempt: 1, concerns: ["x"], summary: "s" })
      .send({ type: "task_pr_opened", task: "a", pr })
      .send({ type: "task_pr_merged", task: "a", pr });
    for (const d of [early, normal]) {
      expect(d.state.tasks.a).toMatchObject({ status: "merged", pr, concerns: ["x"], summary: "s" });
      expect(d.state.tasks.b).toMatchObject({ status: "running", attempt: 1 });
    }
  });

  it("times out an attempt that never reports, cancels its job and retries it", () => {
    const d = driver([{ id: "a" }], undefined, "max_task_attempts: 2").send({
      type: "workstream_prepared",
      workstream: "default",
      at: 1,
    });
    d.send({ type: "tick", at: 500 });
    expect(d.effects).toEqual([]);
    d.send({ type: "tick", at: 2000 });
    expect(d.types()).toEqual(["cancel_attempt:a", "dispatch:a", "update_status:"]);
    expect(d.state.tasks.a!.attempts[0]).toMatchObject({ outcome: "timed_out" });
    d.send({ type: "tick", at: 5000 });
    expect(d.state.tasks.a).toMatchObject({ status: "failed", reason: "attempt 2 timed out" });
    expect(d.state.outcome).toBe("completed_with_failures");
  });

  it("notices an integration PR closed without merging and blocks what waited for it", () => {
    const d = driver(
      [
        { id: "a", ws: "x" },
        { id: "b", deps: ["a"], ws: "y" },
      ],
      [{ id: "x" }, { id: "y" }],
    ).send({ type: "workstream_prepared", workstream: "x" });
    d.finish("a");
    expect(d.types()).toContain("open_integration_pr:x");
    d.send({ type: "integration_pr_opened", workstream: "x", pr: { number: 20, url: "u/20" } });
    d.send({ type: "integration_pr_closed", workstream: "x" });
    expect(d.state.workstreams.x).toMatchObject({
      status: "failed",
      reason: "integration PR #20 was closed without merging",
    });
    expect(d.state.tasks.b).toMatchObject({ status: "blocked", reason: "upstream workstream 'x' failed" });
    expect(d.state.outcome).toBe("completed_with_failures");
  });

  it("names the root of what a failure blocks: a workstream only blocked says so, not that its task failed", () => {
    const tasks = [
      { id: "a", ws: "x" },
      { id: "b", deps: ["a"], ws: "y" },
      { id: "c", deps: ["b"], ws: "y" },
      { id: "d", ws: "z" },
    ];
    const workstreams = [{ id: "x" }, { id: "y" }, { id: "z", parent: "y" }];
    const d = driver(tasks, workstreams).send({ type: "workstream_prepared", workstream: "x" });
    d.send({ type: "job_failed", task: "a", attempt: 1, reason: "tests failed" });
    expect(d.state.workstreams.x).toMatchObject({ status: "failed", reason: "task 'a' failed" });
    expect(d.state.workstreams.y).toMatchObject({ status: "failed", reason: "blocked: task 'a' failed" });
    expect(d.state.workstreams.z).toMatchObject({ status: "failed", reason: "blocked: task 'a' failed" });
    expect(d.state.tasks.c).toMatchObject({ status: "blocked", reason: "dependency 'b' failed" });
    const plan = buildPlan(graphOf(tasks, workstreams));
    const roots = rootCauses(plan, d.state);
    expect(Object.fromEntries(roots.tasks)).toEqual({ b: { task: "a" }, c: { task: "a" }, d: { task: "a" } });
    expect(Object.fromEntries(roots.workstreams)).toEqual({
      x: { task: "a" },
      y: { task: "a" },
      z: { task: "a" },
    });
  });

  it("retry keeps the task's identity: attempts continue and blocked dependents resume", () => {
    const d = driver([{ id: "a" }, { id: "b", deps: ["a"] }]).send({
      type: "workstream_prepared",
      workstream: "default",
    });
    d.send({ type: "job_failed", task: "a", attempt: 1, reason: "tests failed" });
    expect(d.state.tasks.b!.status).toBe("blocked");
    expect(d.state.outcome).toBe("completed_with_failures");
    d.send({ type: "command", command: "retry", task: "b", by: "octocat" });
    expect(d.effects[0]).toMatchObject({ type: "reply", ok: false });
    d.send({ type: "command", command: "retry", task: "a", by: "octocat" });
    expect(d.effects).toContainEqual(
      expect.objectContaining({ type: "reply", ok: true, message: "retrying 'a' (attempt 2)" }),
    );
    expect(d.effects).toContainEqual(expect.objectContaining({ type: "dispatch", key: "g/1/a/2" }));
    expect(d.state.tasks.b!.status).toBe("pending");
    expect(d.state.outcome).toBeNull();
    // A second retry while the attempt runs starts nothing more: it is refused, with the reason.
    d.send({ type: "command", command: "retry", task: "a", by: "octocat" });
    expect(d.effects).toEqual([
      expect.objectContaining({
        type: "reply",
        ok: false,
        message: "task 'a' is running; only failed or cancelled tasks can be retried",
      }),
    ]);
    d.finish("a", 2);
    expect(d.state.tasks.b).toMatchObject({ status: "running", attempt: 1 });
  });

  it("counts a human merge of a failed task's PR the same as success", () => {
    const pr = { number: 3, url: "u/3" };
    const d = driver([{ id: "a" }, { id: "b", deps: ["a"] }]).send({
      type: "workstream_prepared",
      workstream: "default",
    });
    d.send({ type: "job_succeeded", task: "a", attempt: 1 }).send({ type: "task_pr_opened", task: "a", pr });
    d.send({ type: "task_merge_failed", task: "a", reason: "required check 'ci' failed" });
    expect(d.state.tasks.a!.status).toBe("failed");
    expect(d.state.tasks.b!.status).toBe("blocked");
    d.send({ type: "task_pr_merged", task: "a", pr });
    expect(d.state.tasks.a!.status).toBe("merged");
    expect(d.state.tasks.b!.status).toBe("running");
  });

  it("cancels one task, blocking its dependents, or the whole run", () => {
    const d = driver(
      [{ id: "a" }, { id: "b", deps: ["a"] }, { id: "c", ws: "z" }],
      [{ id: "default" }, { id: "z" }],
      "max_concurrency: 2",
    );
    d.send({ type: "workstream_prepared", workstream: "default" });
    d.send({ type: "command", command: "cancel", task: "a", by: "octocat" });
    expect(d.types()).toContain("cancel_attempt:a");
    expect(d.state.tasks.a).toMatchObject({ status: "cancelled", reason: "cancelled by @octocat" });
    expect(d.state.tasks.b).toMatchObject({ status: "blocked", reason: "dependency 'a' was cancelled" });
    d.send({ type: "command", command: "cancel" });
    expect(d.state.tasks.c!.status).toBe("cancelled");
    expect(d.state.outcome).toBe("cancelled");
    // Retrying a task of the cancelled run: the run goes on with it (and what waited on it); the
    // other cancelled tasks stay cancelled until they are retried too.
    d.send({ type: "command", command: "retry", task: "a" });
    expect(d.effects[0]).toMatchObject({
      type: "reply",
      ok: true,
      message: "retrying 'a' (attempt 2); the cancelled run goes on",
    });
    expect(d.state).toMatchObject({ cancelled: false, outcome: null });
    expect(d.types()).toContain("dispatch:a");
    d.finish("a", 2);
    expect(d.state.tasks.b!.status).toBe("running");
    d.finish("b", 1, 11);
    expect(d.types()).toContain("open_integration_pr:default");
    expect(d.state.tasks.c!.status).toBe("cancelled");
  });

  it("does not count an attempt whose agent could not work, nor retry it by itself", () => {
    const d = driver([{ id: "a" }], undefined, "max_task_attempts: 2").send({
      type: "workstream_prepared",
      workstream: "default",
    });
    const reason = "Claude Code could not authenticate: the login expired, then retry the task";
    d.send({ type: "job_failed", task: "a", attempt: 1, reason, agentUnavailable: true });
    // The same cause would fail a retry at once: the task waits for a person, with the reason.
    expect(d.state.tasks.a).toMatchObject({ status: "failed", reason, attempt: 1, attemptBase: 1 });
    expect(d.types()).not.toContain("dispatch:a");
    d.send({ type: "command", command: "retry", task: "a" });
    d.send({ type: "job_failed", task: "a", attempt: 2, reason: "tests failed" });
    // Its real failure is the first counted: one attempt of two is left, so it is retried.
    expect(d.state.tasks.a).toMatchObject({ status: "running", attempt: 3 });
  });

  it("resets like a stack: only the workstream's tip, which then runs again", () => {
    const d = driver([{ id: "a" }, { id: "b", deps: ["a"] }]).send({
      type: "workstream_prepared",
      workstream: "default",
    });
    d.finish("a", 1, 1).finish("b", 1, 2);
    expect(d.types()).toContain("open_integration_pr:default");
    d.send({ type: "command", command: "reset", task: "a" });
    expect(d.effects[0]).toMatchObject({
      ok: false,
      message: "'a' is not the tip of workstream 'default'; reset 'b' first",
    });
    d.send({ type: "command", command: "reset", task: "b" });
    expect(d.effects).toContainEqual({
      type: "reset_task",
      key: "g/1/b/reset/1",
      task: "b",
      pr: { number: 2, url: "u/2" },
    });
    expect(d.effects).toContainEqual(expect.objectContaining({ type: "dispatch", key: "g/1/b/2" }));
    expect(d.state.workstreams.default!.status).toBe("active");
  });

  it("finishes only when every task is terminal and auto-merges have landed", () => {
    const d = driver([{ id: "a", ws: "x" }], [{ id: "x", autoMerge: true }]).send({
      type: "workstream_prepared",
      workstream: "x",
    });
    d.finish("a");
    d.send({ type: "integration_pr_opened", workstream: "x", pr: { number: 5, url: "u/5" } });
    expect(d.types()).toContain("merge_integration_pr:x");
    expect(d.state.outcome).toBeNull();
    d.send({ type: "integration_pr_merged", workstream: "x" });
    expect(d.state.outcome).toBe("succeeded");
    expect(d.types()).toContain("finish_run:");
  });

  it("leaves the PR for a person when auto-merge fails, and waits for it rather than calling the run done", () => {
    const d = driver([{ id: "a", ws: "x" }], [{ id: "x", autoMerge: true }]).send({
      type: "workstream_prepared",
      workstream: "x",
    });
    d.finish("a").send({ type: "integration_pr_opened", workstream: "x", pr: { number: 5, url: "u/5" } });
    d.send({ type: "integration_merge_failed", workstream: "x", reason: "review required" });
    expect(d.state.workstreams.x).toMatchObject({
      status: "pr_open",
      autoMergeSkipped: true,
      reason: "auto-merge failed: review required",
    });
    expect(d.state.outcome).toBeNull();
    d.send({ type: "integration_pr_merged", workstream: "x" });
    expect(d.state.outcome).toBe("succeeded");
  });

  it("does not count ops concerns against auto-merge", () => {
    const d = driver([{ id: "a", ws: "x" }], [{ id: "x", autoMerge: true }]).send({
      type: "workstream_prepared",
      workstream: "x",
    });
    d.send({ type: "job_succeeded", task: "a", attempt: 1, opsConcerns: ["pip is slow"] });
    d.send({ type: "task_pr_opened", task: "a", pr: { number: 1, url: "u/1" } }).send({
      type: "task_pr_merged",
      task: "a",
      pr: { number: 1, url: "u/1" },
    });
    d.send({ type: "integration_pr_opened", workstream: "x", pr: { number: 5, url: "u/5" } });
    expect(d.types()).toContain("merge_integration_pr:x");
  });
  it("records concerns, gate runs and pushes as they are reported, each once", () => {
    const d = driver([{ id: "a", ws: "x" }], [{ id: "x", autoMerge: true }]).send({
      type: "workstream_prepared",
      workstream: "x",
    });
    d.send({
      type: "concern_recorded",
      task: "a",
      attempt: 1,
      kind: "design",
      message: "spec contradicts itself",
    });
    d.send({ type: "concern_recorded", task: "a", attempt: 1, kind: "ops", message: "slow install" });
    d.send({ type: "gate_result", task: "a", attempt: 1, n: 1, passed: false });
    d.send({ type: "gate_result", task: "a", attempt: 1, n: 2, passed: true });
    const seq = d.state.seq;
    d.send({ type: "gate_result", task: "a", attempt: 1, n: 1, passed: false });
    d.send({
      type: "concern_recorded",
      task: "a",
      attempt: 1,
      kind: "design",
      message: "spec contradicts itself",
    });
    expect(d.state.seq).toBe(seq);
    d.send({ type: "task_branch_pushed", task: "a", attempt: 1, sha: "abc123" });
    d.send({
      type: "job_succeeded",
      task: "a",
      attempt: 1,
      concerns: ["spec contradicts itself"],
      opsConcerns: ["slow install"],
    });
    expect(d.state.tasks.a).toMatchObject({
      concerns: ["spec contradicts itself"],
      opsConcerns: ["slow install"],
    });
    expect(d.state.tasks.a!.attempts[0]).toMatchObject({
      pushedSha: "abc123",
      gates: [
        { n: 1, passed: false },
        { n: 2, passed: true },
      ],
    });
    d.send({ type: "task_pr_opened", task: "a", pr: { number: 1, url: "u/1" } }).send({
      type: "task_pr_merged",
      task: "a",
      pr: { number: 1, url: "u/1" },
    });
    d.send({ type: "integration_pr_opened", workstream: "x", pr: { number: 5, url: "u/5" } });
    // A design concern reported on its own still stops auto-merge.
    expect(d.types()).not.toContain("merge_integration_pr:x");
    expect(d.state.workstreams.x!.autoMergeSkipped).toBe(true);
  });
  it("runs a lost attempt again without counting it against the budget", () => {
    const d = driver([{ id: "a" }]).send({ type: "workstream_prepared", workstream: "default" });
    d.send({ type: "job_lost", task: "a", attempt: 1, reason: "the runner was interrupted" });
    expect(d.effects).toContainEqual({ type: "dispatch", key: "g/1/a/2", task: "a", attempt: 2 });
    d.send({ type: "job_failed", task: "a", attempt: 2, reason: "tests failed" });
    // max_task_attempts is 1: the lost attempt did not use it up, the failed one did.
    expect(d.state.tasks.a).toMatchObject({ status: "failed", attempt: 2 });
  });

  it("lists the effects a crash may have lost, for the reconciler to issue again", () => {
    const engine = createEngine(
      graphOf(
        [
          { id: "a", ws: "x" },
          { id: "b", ws: "y" },
        ],
        [{ id: "x", autoMerge: true }, { id: "y" }],
        "max_concurrency: 2",
      ),
    );
    const { state } = engine.start(0);
    expect(engine.pendingEffects(state).map((e) => e.key)).toEqual(["g/1/ws/x/prepare", "g/1/ws/y/prepare"]);
    let next = engine.decide(state, { type: "workstream_prepared", workstream: "x", at: 1 }).state;
    next = engine.decide(next, { type: "job_succeeded", task: "a", attempt: 1, at: 2 }).state;
    expect(engine.pendingEffects(next).map((e) => e.type)).toEqual(["prepare_workstream", "open_task_pr"]);
    next = engine.decide(next, {
      type: "task_pr_opened",
      task: "a",
      pr: { number: 4, url: "u/4" },
      at: 3,
    }).state;
    expect(engine.pendingEffects(next)).toContainEqual({
      type: "merge_task_pr",
      key: "g/1/a/merge",
      task: "a",
      pr: { number: 4, url: "u/4" },
    });
    next = engine.decide(next, {
      type: "task_pr_merged",
      task: "a",
      pr: { number: 4, url: "u/4" },
      at: 4,
    }).state;
    expect(engine.pendingEffects(next)).toContainEqual({
      type: "open_integration_pr",
      key: "g/1/ws/x/integration",
      workstream: "x",
    });
    next = engine.decide(next, {
      type: "integration_pr_opened",
      workstream: "x",
      pr: { number: 5, url: "u/5" },
      at: 5,
    }).state;
    expect(engine.pendingEffects(next)).toContainEqual({
      type: "merge_integration_pr",
      key: "g/1/ws/x/merge",
      workstream: "x",
      pr: { number: 5, url: "u/5" },
    });
    // Listing pending effects changes nothing.
    const before = structuredClone(next);
    engine.pendingEffects(next);
    expect(next).toEqual(before);
  });
});

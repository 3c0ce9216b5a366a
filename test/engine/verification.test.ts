import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/engine.ts";
import { simulate, simulationJson } from "../../src/engine/simulate.ts";
import { reproduce } from "../../src/engine/verification.ts";
import { checkIndex, StateDamageError } from "../../src/protocol/state-check.ts";
import type { EngineEffect, EngineEvent, RunState } from "../../src/engine/types.ts";
import type { Plan } from "../../src/plan/model.ts";
import { graphOf } from "../support/graphs.ts";

/** Two workstreams in parallel, both gated and merging into main. */
const graphWith = (head = "", ws = "") =>
  graphOf(
    [
      { id: "a", ws: "left", extra: "completion_gate: make test" },
      { id: "b", ws: "right", extra: "completion_gate: make test" },
    ],
    [
      { id: "left", autoMerge: true },
      { id: "right", autoMerge: true, ...(ws ? { extra: ws } : {}) },
    ],
    `max_concurrency: 2${head ? `\n${head}` : ""}`,
  );

const events = (state: RunState, plan: Plan) =>
  (
    simulationJson({ plan, state, outcome: "succeeded", eventCount: 0, reviewerMerged: [] }) as {
      events: { type: string; workstream?: string; detail?: string }[];
    }
  ).events;

/** A run whose `right` tasks are merged and whose integration PR is being opened (`opened` opens it). */
function withOpenPr(head = "", ws = "") {
  const engine = createEngine(graphWith(head, ws));
  const { state } = engine.start(0);
  Object.assign(state.tasks.b!, { status: "merged" });
  Object.assign(state.workstreams.right!, { status: "merge_ready", unfinished: 0, integration: "opening" });
  return { engine, state };
}

/** A finished job's record, as the engine writes it. */
const job = {
  n: 1,
  dispatchedAt: 0,
  deadline: 1,
  job: "7",
  startedAt: 0,
  outcome: "succeeded",
  reason: null,
  costMicros: 0,
  turns: 1,
};

const opened: EngineEvent = {
  type: "integration_pr_opened",
  workstream: "right",
  pr: { number: 9, url: "u" },
  at: 1,
};
const finished = (
  kind: "verify" | "repair",
  n: number,
  ok: boolean,
  extra: object = {},
): Extract<EngineEvent, { type: "resolution_finished" }> => ({
  type: "resolution_finished",
  workstream: "right",
  kind,
  n,
  ok,
  ...(ok
    ? { base: "b".repeat(40), head: `${n}`.repeat(40) }
    : { output: "TypeError: total is not a function" }),
  ...extra,
  at: 10 + n,
});

describe("verifying an integration branch before it lands", () => {
  it("runs the gates on the tree that will land before the merge, and merges what passed", () => {
    const { engine, state } = withOpenPr();
    const first = engine.apply(state, opened);
    expect(first.filter((e) => e.type.endsWith("_pr") || e.type === "verify_integration")).toEqual([
      { type: "verify_integration", key: "g/1/ws/right/verify/1", workstream: "right", n: 1 },
    ]);
    // The same answer twice: one merge, pinned to what was verified.
    const merge = engine.apply(state, finished("verify", 1, true));
    expect(engine.apply(state, finished("verify", 1, true))).toEqual([]);
    expect(merge).toContainEqual({
      type: "merge_integration_pr",
      key: "g/1/ws/right/merge",
      workstream: "right",
      pr: { number: 9, url: "u" },
      verified: { base: "b".repeat(40), head: "1".repeat(40) },
    });
    expect(events(state, engine.plan).map((e) => e.type)).toEqual([
      "integration_opened",
      "verification",
      "verified",
    ]);
  });

  it("repairs a tree whose gates fail, charging the workstream, and merges once the repair passes", () => {
    const { engine, state } = withOpenPr("max_cost_usd: 5");
    engine.apply(state, opened);
    const repair = engine.apply(state, finished("verify", 1, false));
    expect(repair).toContainEqual(
      expect.objectContaining({ type: "repair_integration", key: "g/1/ws/right/repair/1", n: 1 }),
    );
    expect(state.workstreams.right!.verification).toMatchObject({
      failure: "TypeError: total is not a function",
      repairs: [{ n: 1, outcome: null }],
    });
    expect(state.budget!.workstreams.right!.reservedMicros).toBeGreaterThan(0);
    const merge = engine.apply(
      state,
      finished("repair", 1, true, { costMicros: 300_000, summary: "renamed the call" }),
    );
    expect(merge).toContainEqual(
      expect.objectContaining({ type: "merge_integration_pr", workstream: "right" }),
    );
    expect(state.workstreams.right!.verification!.repairs[0]).toMatchObject({
      outcome: "succeeded",
      costMicros: 300_000,
      summary: "renamed the call",
    });
    expect(state.budget!.workstreams.right).toMatchObject({ spentMicros: 300_000, reservedMicros: 0 });
  });

  it.each([
    // repairs needed, graph key, workstream key -> repairs run, outcome
    [0, "", "", 0, "succeeded"],
    [1, "", "", 1, "succeeded"],
    [2, "", "", 2, "succeeded"],
    [3, "", "", 2, "waiting_for_review"],
    [3, "max_repair_attempts: 3", "", 3, "succeeded"],
    [1, "max_repair_attempts: 3", "max_repair_attempts: 0", 0, "waiting_for_review"],
    [5, "verify_integration: false", "", 0, "succeeded"],
    [5, "", "verify_integration: false", 0, "succeeded"],
  ] as const)(
    "a branch that needs %i repair(s), with %j %j: %i repair(s), %s",
    (needed, head, ws, expected, outcome) => {
      const result = simulate(graphWith(head, ws), {
        brokenTogether: new Map([["right", needed]]),
        reviewerMerges: false,
      });
      const v = result.state.workstreams.right!.verification;
      expect(v?.repairs ?? []).toHaveLength(expected);
      expect(result.outcome).toBe(outcome);
      if (head.includes("false") || ws.includes("false")) expect(v).toBeUndefined();
      if (outcome === "waiting_for_review") {
        const reason = result.state.workstreams.right!.reason!;
        expect(reason).toMatch(/^not verified: its gates fail on the tree that would land \(/);
        expect(reproduce(result.plan, "right", "origin")).toBe(
          "git fetch origin && git switch --detach origin/agentrelay/g/right/integration && git merge --no-edit origin/main && make test",
        );
        expect(v!.failure).toBe("simulated failure of the gates");
        expect(events(result.state, result.plan).at(-1)).toEqual({
          type: "verification_failed",
          workstream: "right",
          detail: reason,
        });
      }
    },
  );

  it("verifies nothing without gates: the merge goes ahead as before", () => {
    const graph = graphOf([{ id: "a", ws: "w" }], [{ id: "w", autoMerge: true }]);
    const result = simulate(graph, { brokenTogether: new Map([["w", 5]]) });
    expect(result.outcome).toBe("succeeded");
    expect(result.state.workstreams.w!.verification).toBeUndefined();
  });

  it("lands one workstream at a time into a target: the second verifies once the first merged", () => {
    const engine = createEngine(graphWith());
    const { state } = engine.start(0);
    for (const [ws, task, n] of [
      ["left", "a", 8],
      ["right", "b", 9],
    ] as const) {
      Object.assign(state.tasks[task]!, { status: "merged" });
      Object.assign(state.workstreams[ws]!, { status: "merge_ready", unfinished: 0, integration: "opening" });
      engine.apply(state, {
        type: "integration_pr_opened",
        workstream: ws,
        pr: { number: n, url: "u" },
        at: 1,
      });
    }
    expect(state.workstreams.left!.verification!.runs).toHaveLength(1);
    expect(state.workstreams.right!.verification).toBeUndefined(); // waits its turn
    engine.apply(state, { ...finished("verify", 1, true), workstream: "left" });
    expect(state.workstreams.right!.verification).toBeUndefined(); // left's merge is on its way
    const next = engine.apply(state, { type: "integration_pr_merged", workstream: "left", at: 20 });
    expect(next).toContainEqual(expect.objectContaining({ type: "verify_integration", workstream: "right" }));
  });

  it("verifies again when the target moved before the merge, at most max_verifications times", () => {
    const { engine, state } = withOpenPr("max_verifications: 2");
    engine.apply(state, opened);
    engine.apply(state, finished("verify", 1, true));
    const moved: EngineEvent = {
      type: "integration_unverified",
      workstream: "right",
      reason: "main moved since it was verified",
      at: 20,
    };
    expect(engine.apply(state, moved)).toContainEqual(
      expect.objectContaining({ type: "verify_integration", n: 2 }),
    );
    expect(engine.apply(state, moved)).toEqual([]); // nothing verified to move from: the same news twice
    engine.apply(state, finished("verify", 2, true));
    engine.apply(state, moved);
    expect(state.workstreams.right!.verification!.runs).toHaveLength(2);
    expect(state.workstreams.right!.reason).toBe(
      "not verified: its target moved 2 times while it was verified (`max_verifications: 2`)",
    );
  });

  it("does not count a lost verification, and verifies again after one that failed before its gates", () => {
    const { engine, state } = withOpenPr();
    engine.apply(state, opened);
    const lost = engine.apply(state, {
      type: "resolution_lost",
      workstream: "right",
      kind: "verify",
      n: 1,
      reason: "interrupted",
      at: 2,
    });
    expect(lost).toContainEqual(expect.objectContaining({ type: "verify_integration", n: 2 }));
    const deadline = state.workstreams.right!.verification!.runs[1]!.deadline!;
    const late = engine.apply(state, { type: "tick", at: deadline });
    expect(late).toContainEqual(expect.objectContaining({ type: "verify_integration", n: 3 }));
    expect(state.workstreams.right!.verification!.runs.map((r) => r.outcome)).toEqual([
      "lost",
      "failed",
      null,
    ]);
    expect(state.workstreams.right!.verification!.repairs).toEqual([]);
  });

  it("hands a conflict found while verifying to a resolution, whose gates verify the merged tree", () => {
    const { engine, state } = withOpenPr();
    engine.apply(state, opened);
    const resolve = engine.apply(
      state,
      finished("verify", 1, false, { files: ["calc.py"], output: undefined }),
    );
    expect(resolve).toContainEqual(
      expect.objectContaining({ type: "resolve_conflicts", files: ["calc.py"] }),
    );
    const merge = engine.apply(state, {
      type: "resolution_finished",
      workstream: "right",
      n: 1,
      ok: true,
      base: "c".repeat(40),
      head: "d".repeat(40),
      summary: "kept both",
      at: 30,
    });
    expect(merge).toContainEqual(
      expect.objectContaining({
        type: "merge_integration_pr",
        verified: { base: "c".repeat(40), head: "d".repeat(40) },
      }),
    );
    expect(state.workstreams.right!.conflict!.resolutions[0]!.summary).toBe("kept both");
  });

  it("repairs required checks that fail on the branch, once per head", () => {
    const { engine, state } = withOpenPr();
    engine.apply(state, opened);
    engine.apply(state, finished("verify", 1, true));
    const failed: EngineEvent = {
      type: "integration_checks_failed",
      workstream: "right",
      head: "1".repeat(40),
      output: "ci / test: failure",
      at: 20,
    };
    expect(engine.apply(state, failed)).toContainEqual(
      expect.objectContaining({ type: "repair_integration" }),
    );
    engine.apply(state, finished("repair", 1, false));
    engine.apply(state, finished("repair", 2, false));
    expect(engine.apply(state, failed)).toEqual([]);
    expect(state.workstreams.right!.reason).toMatch(/2 repair attempts did not fix it/);
  });

  it("tells the person why the last repair ended when it ended before its gates judged it", () => {
    const { engine, state } = withOpenPr();
    engine.apply(state, opened);
    engine.apply(state, finished("verify", 1, false));
    engine.apply(state, finished("repair", 1, false));
    const refused =
      "GitHub refused the push: refusing to allow a GitHub App to update workflow `.github/workflows/ci.yml` without `workflows` permission";
    engine.apply(state, finished("repair", 2, false, { output: undefined, reason: refused }));
    expect(state.workstreams.right!.reason).toContain(
      `2 repair attempts did not fix it; the last ended before its gates judged it: ${refused})`,
    );
  });

  it("never starts a verification or repair from the reconciler's copy, only from a fact", () => {
    const { engine, state } = withOpenPr();
    Object.assign(state.workstreams.right!, {
      status: "pr_open",
      integration: "open",
      pr: { number: 9, url: "u" },
    });
    const owed: EngineEffect[] = engine.pendingEffects(state);
    expect(owed.filter((e) => e.type === "verify_integration")).toEqual([]);
    expect(engine.apply(state, { type: "tick", at: 5 })).toContainEqual(
      expect.objectContaining({ type: "verify_integration", n: 1 }),
    );
  });

  it("stops a running verification or repair when the run is cancelled", () => {
    const { engine, state } = withOpenPr();
    engine.apply(state, opened);
    engine.apply(state, finished("verify", 1, false));
    expect(engine.apply(state, { type: "command", command: "cancel", at: 30 })).toContainEqual({
      type: "cancel_resolution",
      key: "g/1/ws/right/repair/1/cancel",
      workstream: "right",
      kind: "repair",
      n: 1,
    });
  });

  it("verifies an integration PR that waits for a person, and says what failed", () => {
    const graph = graphOf([{ id: "a", ws: "w", extra: "completion_gate: make test" }], [{ id: "w" }]);
    const result = simulate(graph, {
      brokenTogether: new Map([["w", Infinity]]),
      reviewerMerges: false,
    });
    expect(result.state.workstreams.w!.verification!.repairs).toHaveLength(2);
    expect(result.state.workstreams.w!.reason).toMatch(/^not verified: /);
  });

  it("forgets what was verified when a task of the workstream is reset: its branch will change", () => {
    const { engine, state } = withOpenPr();
    engine.apply(state, opened);
    engine.apply(state, finished("verify", 1, true));
    expect(state.workstreams.right!.verification!.passed).not.toBeNull();
    engine.apply(state, { type: "command", command: "reset", task: "b", at: 30 });
    expect(state.workstreams.right!.verification).toMatchObject({ passed: null, toPerson: false });
  });

  it.each([
    [
      "whose repairs are no list",
      { runs: [], repairs: "none" },
      "workstreams.right.verification.repairs: Invalid input: expected array",
    ],
    [
      "whose repair cost no amount",
      { runs: [], repairs: [{ ...job, costMicros: 1e300 }] },
      "workstreams.right.verification.repairs.0.costMicros: Too big",
    ],
  ])("refuses a stored verification %s as damage, in one line", (_what, verification, message) => {
    const { state } = withOpenPr();
    const index = JSON.parse(JSON.stringify({ ...state, tasks: undefined })) as Record<string, unknown>;
    (index.workstreams as Record<string, Record<string, unknown>>).right!.verification = verification;
    expect(() => checkIndex("run.json", index)).toThrow(StateDamageError);
    expect(() => checkIndex("run.json", index)).toThrow(message);
  });
});

describe("failures told apart before a repair is spent", () => {
  it("lands a tree whose gate was flaky on its pass, and says so in the run's history", () => {
    const { engine, state } = withOpenPr();
    engine.apply(state, opened);
    const summary = "`make test` failed, then passed on the same tree with nothing changed (flaky)";
    const effects = engine.apply(state, finished("verify", 1, true, { verdict: "flaky", summary }));
    expect(effects.map((e) => e.type)).toContain("merge_integration_pr");
    expect(effects.map((e) => e.type)).not.toContain("repair_integration");
    expect(events(state, engine.plan).at(-1)?.detail).toContain(summary);
  });

  it("leaves a gate that timed out to a person as a timeout, with no repair", () => {
    const { engine, state } = withOpenPr();
    engine.apply(state, opened);
    const reason = "the gate timed out on the merged result: make test (did not finish within 600 s)";
    const effects = engine.apply(state, finished("verify", 1, false, { verdict: "timed_out", reason }));
    expect(effects.map((e) => e.type)).not.toContain("repair_integration");
    const ws = state.workstreams.right!;
    expect(ws.verification).toMatchObject({ toPerson: true, repairs: [] });
    expect(ws.reason).toBe(
      `not verified: ${reason}: a timeout, not a failure, so nothing was repaired (raise the gate's time limit or make it faster, then retry)`,
    );
  });

  it("leaves a repair that changed what judges it to a person, with its diff, and repairs no more", () => {
    const { engine, state } = withOpenPr();
    engine.apply(state, opened);
    engine.apply(state, finished("verify", 1, false));
    const reason =
      "the repair changed what judges it (deleted the test test/report.test.js): a person decides whether that holds";
    const diff = "diff --git a/test/report.test.js b/test/report.test.js\ndeleted file mode 100644";
    const effects = engine.apply(
      state,
      finished("repair", 1, false, { verdict: "weakened", reason, output: diff }),
    );
    expect(effects.map((e) => e.type)).not.toContain("repair_integration");
    expect(effects.map((e) => e.type)).not.toContain("merge_integration_pr");
    expect(state.workstreams.right!.verification).toMatchObject({ toPerson: true, failure: diff });
    expect(state.workstreams.right!.reason).toBe(`not verified: ${reason} (its diff is below)`);
  });

  it("leaves a repair whose target changed a workflow file to a person, in one line, and repairs no more", () => {
    const { engine, state } = withOpenPr();
    engine.apply(state, opened);
    engine.apply(state, finished("verify", 1, false));
    const reason =
      "main changed .github/workflows/ci.yml, and GitHub refuses a push that brings a workflow change from agentrelay's tokens (they never hold `workflows`): merge main into agentrelay/g/right/integration yourself and push (the run goes on by itself)";
    const effects = engine.apply(state, finished("repair", 1, false, { verdict: "workflows", reason }));
    expect(effects.map((e) => e.type)).not.toContain("repair_integration");
    expect(state.workstreams.right!.verification).toMatchObject({ toPerson: true });
    expect(state.workstreams.right!.reason).toBe(`not verified: ${reason}`);
  });
});

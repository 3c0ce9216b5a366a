/**
 * Where verification meets a person, every line, row and body says the same (engine/landing.ts): a
 * PR is offered to a person to merge only once it may land, one no repair fixed is not to be merged,
 * and what will keep a PR from merging itself (a design concern, `auto_merge: false`) is said while it
 * waits its turn to be verified.
 */
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/engine.ts";
import type { EngineEvent } from "../../src/engine/types.ts";
import { integrationPrBody, planSummary } from "../../src/github/render.ts";
import { buildPlan } from "../../src/plan/plan.ts";
import { statusComment, waitingFor } from "../../src/github/status-comment.ts";
import { workstreamState } from "../../src/github/workstream-chart.ts";
import { graphOf } from "../support/graphs.ts";

const url = (n: number) => `https://github.com/o/r/pull/${n}`;

/** Three gated workstreams into main, their tasks merged: `left` (auto), `manual` (auto_merge off), `concern` (auto, a concern). */
function threeOpen() {
  const engine = createEngine(
    graphOf(
      [
        { id: "a", ws: "left", extra: "completion_gate: make test" },
        { id: "b", ws: "manual", extra: "completion_gate: make test" },
        { id: "c", ws: "concern", extra: "completion_gate: make test" },
      ],
      [{ id: "left", autoMerge: true }, { id: "manual" }, { id: "concern", autoMerge: true }],
      "max_concurrency: 3\nmax_repair_attempts: 1",
    ),
  );
  const { state } = engine.start(0);
  for (const [task, ws] of [
    ["a", "left"],
    ["b", "manual"],
    ["c", "concern"],
  ] as const) {
    Object.assign(state.tasks[task]!, { status: "merged" });
    Object.assign(state.workstreams[ws]!, { status: "merge_ready", unfinished: 0, integration: "opening" });
  }
  state.tasks.c!.concerns.push("the schema should be versioned");
  const apply = (event: EngineEvent) => engine.apply(state, event);
  (["left", "manual", "concern"] as const).forEach((workstream, i) =>
    apply({ type: "integration_pr_opened", workstream, pr: { number: i + 1, url: url(i + 1) }, at: i + 1 }),
  );
  return { plan: engine.plan, state, apply };
}

const finished = (
  workstream: string,
  kind: "verify" | "repair",
  ok: boolean,
  at: number,
): Extract<EngineEvent, { type: "resolution_finished" }> => ({
  type: "resolution_finished",
  workstream,
  kind,
  n: 1,
  ok,
  ...(ok ? { base: "b".repeat(40), head: "a".repeat(40) } : { output: "FAIL math.total is not a function" }),
  at,
});

describe("an integration PR on its way to landing", () => {
  it("is not offered to a person to merge before it is verified, and says what will then hold it", () => {
    const { plan, state } = threeOpen();
    const lines = waitingFor(plan, state);
    expect(lines.join("\n")).not.toContain("Waiting for you");
    expect(lines).toContain(
      "- Waiting their turn to be verified (one landing into a branch at a time): [#2](https://github.com/o/r/pull/2) (then it waits for you: `auto_merge` is off for this workstream), [#3](https://github.com/o/r/pull/3) (then it waits for you: a design concern was raised in `c`).",
    );
    // The rows say it too, never "PR open" alone.
    expect(workstreamState(plan, state, "concern")).toBe(
      "its PR [#3](https://github.com/o/r/pull/3) waits its turn to be verified, then waits for you: a design concern was raised in `c`",
    );
    expect(workstreamState(plan, state, "left")).toContain("is in verification");
    expect(statusComment(plan, state, 0)).toContain("### agentrelay run `g/1`: running (3 merged)");
    expect(integrationPrBody(plan, state, "manual")).toContain(
      "`auto_merge` is off for this workstream, so this PR waits for you: once verified, review it",
    );
  });

  it("is offered to a person once verified", () => {
    const { plan, state, apply } = threeOpen();
    apply(finished("left", "verify", true, 4));
    apply({ type: "integration_pr_merged", workstream: "left", at: 5 });
    apply(finished("manual", "verify", true, 6));
    expect(waitingFor(plan, state)[0]).toBe(
      "- **Waiting for you**: merge [#2](https://github.com/o/r/pull/2) (`manual` into `main`) (verified); `auto_merge` is off for this workstream. Close it instead to fail the workstream.",
    );
    expect(workstreamState(plan, state, "manual")).toBe(
      "its PR [#2](https://github.com/o/r/pull/2) waits for you: merge it",
    );
  });

  it('that no repair fixed is never "merge it" in its row', () => {
    const { plan, state, apply } = threeOpen();
    apply(finished("left", "verify", false, 4));
    apply({ ...finished("left", "repair", false, 5), reason: "the gate failed" });
    expect(waitingFor(plan, state)[0]).toContain("Fix it on its branch, or close it");
    const row = workstreamState(plan, state, "left");
    expect(row).toBe(
      "its PR [#1](https://github.com/o/r/pull/1) is not verified: fix it on its branch, or close it",
    );
    expect(statusComment(plan, state, 0)).not.toMatch(/#1\]\([^)]*\) waits for you: merge it/);
  });
});

describe("a task a serialised overlap holds", () => {
  const tagged = (...paths: string[]) =>
    `tagged_paths: [${paths.map((p) => `{ path: ${p}, category: src }`).join(", ")}]`;
  const graph = graphOf(
    [
      { id: "a", ws: "w1", extra: tagged("x.py") },
      { id: "b", ws: "w2", extra: tagged("x.py") },
      { id: "c", ws: "w3" },
    ],
    [{ id: "w1" }, { id: "w2" }, { id: "w3" }],
    "overlaps: serialize\nmax_concurrency: 4",
  );

  it("is named as held by the overlap in the plan, not by the concurrency", () => {
    const summary = planSummary(buildPlan(graph));
    // The plan's waves follow the overlap (b is in a later wave), so no concurrency is blamed.
    expect(summary).toContain("**Dispatched first**: `a` → `agentrelay/g/a`, `c` → `agentrelay/g/c`");
    expect(summary).not.toContain("one per workstream");
  });

  it("is named as held by the overlap while the run goes on, in its line and its row", () => {
    const engine = createEngine(graph);
    const { state } = engine.start(0);
    for (const ws of ["w1", "w2", "w3"])
      engine.apply(state, { type: "workstream_prepared", workstream: ws, at: 1 });
    const lines = waitingFor(engine.plan, state);
    expect(lines).toContain(
      "- 1 task to do waits for an overlapping workstream to land (`overlaps: serialize`): `b` for `w1`.",
    );
    expect(lines.join("\n")).not.toContain("waits its turn");
    expect(statusComment(engine.plan, state, 2)).toContain(
      "| `b` | `w2` | to do, waits for `w1` to land (an overlap with `a`) |",
    );
  });
});

describe("a task PR whose conflicts an agent resolved", () => {
  it("is said as merged again, not as held by checks or reviews", () => {
    const engine = createEngine(graphOf([{ id: "a", ws: "w" }], [{ id: "w" }]));
    const { state } = engine.start(0);
    Object.assign(state.tasks.a!, {
      status: "pr_open",
      pr: { number: 4, url: url(4) },
      conflict: {
        files: ["x.py"],
        resolutions: [
          { n: 1, dispatchedAt: 0, job: "9", outcome: "succeeded", reason: null, costMicros: 0, turns: 3 },
        ],
      },
    });
    const lines = waitingFor(engine.plan, state);
    expect(lines).toContain(
      "- Merging again once its conflicts were resolved: [#4](https://github.com/o/r/pull/4).",
    );
    expect(lines.join("\n")).not.toContain("required checks or reviews");
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { buildPlan, canonicalOrder } from "../../src/plan/plan.ts";
import {
  failureBlockReason,
  type StatusView,
  type TaskStatus,
  tasksToDispatch,
  type WorkstreamStatus,
} from "../../src/plan/readiness.ts";
import { graphOf } from "../support/graphs.ts";

/** The rule stated plainly: repeatedly take the smallest id whose dependencies are all placed. */
function referenceOrder(tasks: { id: string; deps: string[] }[]): string[] {
  const placed = new Set<string>();
  const order: string[] = [];
  while (order.length < tasks.length) {
    const ready = tasks
      .filter((t) => !placed.has(t.id) && t.deps.every((d) => placed.has(d)))
      .map((t) => t.id);
    const next = ready.sort()[0]!;
    placed.add(next);
    order.push(next);
  }
  return order;
}

/** Random DAGs: task i may depend only on tasks created before it; ids are shuffled names. */
const dagArb = fc
  .integer({ min: 1, max: 25 })
  .chain((n) =>
    fc.tuple(
      fc.shuffledSubarray(
        Array.from({ length: 60 }, (_, i) => `t${String(i).padStart(2, "0")}`),
        { minLength: n, maxLength: n },
      ),
      fc.array(fc.array(fc.nat(), { maxLength: 3 }), { minLength: n, maxLength: n }),
    ),
  )
  .map(([ids, picks]) =>
    ids.map((id, i) => ({ id, deps: i === 0 ? [] : [...new Set(picks[i]!.map((p) => ids[p % i]!))] })),
  );

describe("canonical order", () => {
  it("is Kahn's algorithm with the ready set ordered by id (zeta, alpha, mid -> alpha, mid, zeta)", () => {
    const graph = graphOf([{ id: "zeta" }, { id: "alpha" }, { id: "mid", deps: ["alpha"] }]);
    expect(canonicalOrder(graph)).toEqual(["alpha", "mid", "zeta"]);
  });

  it("matches the plainly stated rule on random DAGs", () => {
    fc.assert(
      fc.property(dagArb, (tasks) => {
        const graph = graphOf(tasks.map((t) => ({ id: t.id, deps: t.deps })));
        expect(canonicalOrder(graph)).toEqual(referenceOrder(tasks));
      }),
      { numRuns: 150 },
    );
  });

  it("handles a 20,000-long chain without recursion", () => {
    const tasks = Array.from({ length: 20_000 }, (_, i) => ({ id: `t${i}`, deps: i ? [`t${i - 1}`] : [] }));
    expect(canonicalOrder(graphOf(tasks)).slice(-2)).toEqual(["t19998", "t19999"]);
  });
});

describe("plan", () => {
  const diamond = graphOf(
    [
      { id: "a", ws: "w1" },
      { id: "b", deps: ["a"], ws: "w2" },
      { id: "c", deps: ["a"], ws: "w3" },
      { id: "d", deps: ["b", "c"], ws: "w4" },
    ],
    [{ id: "w1" }, { id: "w2" }, { id: "w3" }, { id: "w4" }],
  );

  it("groups waves by longest path and lists tasks per workstream", () => {
    const plan = buildPlan(diamond);
    expect(plan.waves).toEqual([["a"], ["b", "c"], ["d"]]);
    expect(plan.tasksByWorkstream.get("w2")).toEqual(["b"]);
    expect(plan.dependents.get("a")).toEqual(["b", "c"]);
    expect(plan.upstreamWorkstreams.get("d")).toEqual(["w2", "w3"]);
  });

  it("lists each upstream workstream once, sorted, and never the task's own", () => {
    const plan = buildPlan(
      graphOf(
        [
          { id: "a", ws: "w3" },
          { id: "b", ws: "w2" },
          { id: "c", ws: "w3" },
          { id: "own", ws: "w1" },
          { id: "d", deps: ["a", "b", "c", "own"], ws: "w1" },
        ],
        [{ id: "w1" }, { id: "w2" }, { id: "w3" }],
      ),
    );
    expect(plan.upstreamWorkstreams.get("d")).toEqual(["w2", "w3"]);
    expect(plan.upstreamWorkstreams.get("a")).toEqual([]);
  });
});

function view(
  tasks: Record<string, TaskStatus>,
  wsIds: Record<string, WorkstreamStatus> = {},
  failedItself: string[] = [],
): StatusView {
  return {
    task: (id) => tasks[id] ?? "pending",
    workstream: (id) => wsIds[id] ?? "pending",
    workstreamFailedItself: (id) => failedItself.includes(id),
  };
}

describe("readiness rule", () => {
  const limits = { maxConcurrency: 4, failFastOnWorkstreamError: false };

  it("serialises a workstream even without dependency edges", () => {
    const plan = buildPlan(graphOf([{ id: "a" }, { id: "b" }, { id: "c" }]));
    expect(tasksToDispatch(plan, view({}), limits)).toEqual(["a"]);
    expect(tasksToDispatch(plan, view({ a: "running" }, { default: "active" }), limits)).toEqual([]);
    expect(tasksToDispatch(plan, view({ a: "merged" }, { default: "active" }), limits)).toEqual(["b"]);
  });

  it("respects max_concurrency, counting tasks already running", () => {
    const plan = buildPlan(
      graphOf(
        [
          { id: "a", ws: "x" },
          { id: "b", ws: "y" },
          { id: "c", ws: "z" },
        ],
        [{ id: "x" }, { id: "y" }, { id: "z" }],
      ),
    );
    expect(tasksToDispatch(plan, view({}), { ...limits, maxConcurrency: 2 })).toEqual(["a", "b"]);
    expect(
      tasksToDispatch(plan, view({ a: "pr_open" }, { x: "active" }), { ...limits, maxConcurrency: 2 }),
    ).toEqual(["b"]);
  });

  it("makes cross-workstream dependents wait for the upstream workstream to merge", () => {
    const plan = buildPlan(
      graphOf(
        [
          { id: "a", ws: "x" },
          { id: "b", deps: ["a"], ws: "y" },
        ],
        [{ id: "x" }, { id: "y" }],
      ),
    );
    expect(tasksToDispatch(plan, view({ a: "merged" }, { x: "pr_open" }), limits)).toEqual([]);
    expect(tasksToDispatch(plan, view({ a: "merged" }, { x: "merged" }), limits)).toEqual(["b"]);
  });

  it("starts a child workstream once its parent has an integration PR", () => {
    const plan = buildPlan(
      graphOf(
        [
          { id: "p1", ws: "parent" },
          { id: "c1", ws: "child" },
        ],
        [{ id: "parent" }, { id: "child", parent: "parent" }],
      ),
    );
    expect(tasksToDispatch(plan, view({}), limits)).toEqual(["p1"]);
    expect(tasksToDispatch(plan, view({ p1: "merged" }, { parent: "pr_open" }), limits)).toEqual(["c1"]);
  });

  it("keeps a workstream that failed itself closed, but not one whose task failed", () => {
    const plan = buildPlan(
      graphOf(
        [
          { id: "a", ws: "x" },
          { id: "b", ws: "y" },
        ],
        [{ id: "x" }, { id: "y" }],
      ),
    );
    expect(tasksToDispatch(plan, view({}, { x: "failed" }, ["x"]), limits)).toEqual(["b"]);
    expect(tasksToDispatch(plan, view({}, { x: "failed" }), limits)).toEqual(["a", "b"]);
  });

  it("honours fail_fast_on_workstream_error for workstreams not started yet", () => {
    const plan = buildPlan(
      graphOf(
        [
          { id: "a", ws: "x" },
          { id: "b", ws: "y" },
        ],
        [{ id: "x" }, { id: "y" }],
      ),
    );
    expect(
      tasksToDispatch(plan, view({}, { x: "failed" }, ["x"]), { ...limits, failFastOnWorkstreamError: true }),
    ).toEqual([]);
  });

  it("gives agentrelay's blocked reasons, first match winning", () => {
    const plan = buildPlan(
      graphOf(
        [
          { id: "a", ws: "x" },
          { id: "b", deps: ["a"], ws: "x" },
          { id: "c", deps: ["a"], ws: "y" },
          { id: "d", ws: "z" },
          { id: "e", ws: "x" },
        ],
        [{ id: "x" }, { id: "y" }, { id: "z", parent: "x" }],
      ),
    );
    const v = view({ a: "failed" }, { x: "failed" });
    expect(failureBlockReason(plan, v, "b")).toBe("dependency 'a' failed");
    expect(failureBlockReason(plan, view({ a: "merged" }, { x: "failed" }), "c")).toBe(
      "upstream workstream 'x' failed",
    );
    expect(failureBlockReason(plan, v, "d")).toBe("ancestor workstream 'x' failed");
    // A sibling that does not depend on the failure is not blocked by it...
    expect(failureBlockReason(plan, v, "e")).toBeNull();
    // ...unless the workstream itself failed (its integration branch could not be prepared).
    expect(failureBlockReason(plan, view({}, { x: "failed" }, ["x"]), "e")).toBe("workstream 'x' failed");
    expect(failureBlockReason(plan, view({}), "d")).toBeNull();
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { overlapsOf, pathsInDescription } from "../../src/plan/overlaps.ts";
import { buildPlan } from "../../src/plan/plan.ts";
import { planSummary } from "../../src/github/render.ts";
import { runWorld } from "../engine/world.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { graphOf, type TaskSpec } from "../support/graphs.ts";

const tagged = (...paths: string[]) =>
  `tagged_paths: [${paths.map((p) => `{ path: ${p}, category: src }`).join(", ")}]`;

describe("overlaps at plan time", () => {
  it("pairs tasks of different workstreams that may run at once and name the same paths", () => {
    const plan = buildPlan(
      graphOf(
        [
          { id: "a", ws: "w1", extra: tagged("src/", "README.md") },
          { id: "b", ws: "w2", extra: tagged("src/calc.py") },
          { id: "c", ws: "w3", extra: tagged("docs/calc.md") },
          { id: "d", ws: "w1", deps: ["a"], extra: tagged("docs/") },
        ],
        [{ id: "w1" }, { id: "w2" }, { id: "w3" }],
      ),
    );
    expect(overlapsOf(plan)).toEqual([
      {
        tasks: ["a", "b"],
        workstreams: ["w1", "w2"],
        paths: ["src/calc.py"],
        from: ["tagged", "tagged"],
        serialized: false,
      },
      {
        tasks: ["c", "d"],
        workstreams: ["w3", "w1"],
        paths: ["docs/calc.md"],
        from: ["tagged", "tagged"],
        serialized: false,
      },
    ]);
  });

  it("reads a description's paths as splitting it into all its words would, without splitting it", () => {
    // The reading by words, as it was before only the words holding '/' or '.' were looked at.
    const byWords = (text: string) => {
      const found = new Set<string>();
      for (const raw of text.split(/[\s`'"()[\]{},;<>]+/)) {
        const token = raw.replace(/[.:!?]+$/, "").replace(/^\.\//, "");
        if (!token || token.includes("://") || !/^(?:\.?[\w-][\w.-]*\/)*(?:\.?[\w-][\w.-]*)?$/.test(token))
          continue;
        if (!token.includes("/") && !/[\w-]{2,}\.[A-Za-z][A-Za-z0-9]{0,7}$/.test(token)) continue;
        if (/^\d+(\.\d+)+$/.test(token)) continue;
        found.add(token.replace(/\/+$/, ""));
      }
      return [...found];
    };
    const text = fc.array(fc.constantFrom(..."ab1_-./:!?` '\"()[]{},;<>\n\tsrc.py/docs/".split("")), {
      maxLength: 60,
    });
    fc.assert(
      fc.property(
        text.map((chars) => chars.join("")),
        (t) => {
          expect(pathsInDescription(t)).toEqual(byWords(t));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("reads the paths a description names where the graph gives none", () => {
    expect(
      pathsInDescription(
        "Rename total to sum in lib/math.js (and `app.js`), e.g. for v1.2; see https://x.io/a.md and docs/.",
      ),
    ).toEqual(["lib/math.js", "app.js", "docs"]);
    const plan = buildPlan(
      parseGraph(
        "g.yaml",
        `name: g
workstreams: [{ id: w1 }, { id: w2 }]
tasks:
  - { id: a, workstream_id: w1, description: Rename total to sum in lib/math.js. }
  - { id: b, workstream_id: w2, description: Add a call., ${tagged("lib/")} }
`,
      ),
    );
    expect(overlapsOf(plan)).toMatchObject([
      { tasks: ["a", "b"], paths: ["lib/math.js"], from: ["described", "tagged"] },
    ]);
  });

  it("leaves out pairs that never run at once: a dependency, a workstream waited for, a parent, the same workstream", () => {
    const same = tagged("x.py");
    const plan = buildPlan(
      graphOf(
        [
          { id: "a", ws: "w1", extra: same },
          { id: "b", ws: "w2", deps: ["a"], extra: same },
          { id: "c", ws: "w3", deps: ["b"], extra: same },
          { id: "d", ws: "w1", extra: same },
          { id: "e", ws: "child", extra: same },
        ],
        [{ id: "w1" }, { id: "w2" }, { id: "w3" }, { id: "child", parent: "w3" }],
      ),
    );
    // b waits for w1 to merge (so for a and d), c for w2, e for its parent w3's PR: nothing runs together.
    expect(overlapsOf(plan)).toEqual([]);
  });

  it("serialises a pair by having the later task wait for the earlier's workstream, unless they would wait for each other", () => {
    const graph = graphOf(
      [
        { id: "a", ws: "w1", extra: tagged("x.py", "y.py") },
        { id: "b", ws: "w2", extra: tagged("x.py") },
        { id: "c", ws: "w2", extra: tagged("z.py") },
        { id: "d", ws: "w1", extra: tagged("z.py") },
      ],
      [{ id: "w1" }, { id: "w2" }],
      "overlaps: serialize",
    );
    const plan = buildPlan(graph);
    const overlaps = overlapsOf(plan);
    expect(overlaps.map((o) => [o.tasks, o.serialized])).toEqual([
      [["a", "b"], true],
      [["c", "d"], false], // d waiting for w2 would close a cycle: w2 waits for w1 already
    ]);
    expect(plan.serialAfter).toEqual(new Map([["b", [{ task: "a", workstream: "w1" }]]]));
    // The waves follow: b starts after every task of w1 (a and d); without serialize all four start at once.
    expect(plan.waves).toEqual([["a", "c", "d"], ["b"]]);
    expect(
      buildPlan(
        graphOf(
          graph.tasks.map((t) => ({ id: t.id, ws: t.workstreamId })),
          [{ id: "w1" }, { id: "w2" }],
        ),
      ).waves,
    ).toEqual([["a", "b", "c", "d"]]);
    expect(planSummary(plan)).toContain(
      "**Overlaps** (tasks of different workstreams that may run at once and change the same paths):\n- `a` (w1) and `b` (w2) both change `x.py`: `b` waits for `w1` to land\n- `c` (w2) and `d` (w1) both change `z.py`",
    );
  });
});

/** Random graphs over a few shared paths, serialised: up to 8 tasks in up to 4 workstreams. */
const serialisedArb = fc
  .record({
    workstreams: fc.integer({ min: 2, max: 4 }),
    tasks: fc.array(
      fc.record({
        ws: fc.nat({ max: 3 }),
        deps: fc.array(fc.nat(), { maxLength: 2 }),
        paths: fc.subarray(["a.py", "b.py", "lib/", "lib/c.py"], { maxLength: 2 }),
        failures: fc.integer({ min: 0, max: 2 }),
      }),
      { minLength: 2, maxLength: 8 },
    ),
    autoMerge: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
    maxConcurrency: fc.integer({ min: 1, max: 4 }),
  })
  .map((s) => {
    const used = [...new Set(s.tasks.map((t) => t.ws % s.workstreams))];
    const tasks: TaskSpec[] = s.tasks.map((t, i) => ({
      id: `t${i}`,
      ws: `w${t.ws % s.workstreams}`,
      deps: i === 0 ? [] : [...new Set(t.deps.map((d) => `t${d % i}`))],
      ...(t.paths.length ? { extra: tagged(...t.paths) } : {}),
    }));
    try {
      const graph = graphOf(
        tasks,
        used.map((w) => ({ id: `w${w}`, autoMerge: s.autoMerge[w]! })),
        `max_concurrency: ${s.maxConcurrency}\nmax_task_attempts: 2\noverlaps: serialize`,
      );
      return { graph, failures: Object.fromEntries(s.tasks.map((t, i) => [`t${i}`, t.failures])) };
    } catch {
      return null; // workstreams that wait for each other in a cycle: rejected by validation
    }
  })
  .filter((s): s is NonNullable<typeof s> => s !== null);

describe("serialised overlaps", () => {
  it("never run at the same time, and every run still ends", () => {
    fc.assert(
      fc.property(
        serialisedArb,
        fc.array(fc.nat(), { minLength: 1, maxLength: 32 }),
        ({ graph, failures }, picks) => {
          const plan = buildPlan(graph);
          const serialised = overlapsOf(plan).filter((o) => o.serialized);
          let i = 0;
          const together: string[] = [];
          const result = runWorld(
            graph,
            { failures, concerns: [] },
            { pick: () => picks[i++ % picks.length]!, duplicate: () => false },
            5_000,
            (state) => {
              const active = (id: string) => ["running", "pr_open"].includes(state.tasks[id]!.status);
              for (const {
                tasks: [a, b],
              } of serialised)
                if (active(a) && active(b)) together.push(`${a} and ${b}`);
            },
          );
          expect(result.violations).toEqual([]);
          expect(together).toEqual([]);
          expect(result.state.outcome).not.toBeNull();
        },
      ),
      { numRuns: 200 },
    );
  });
});

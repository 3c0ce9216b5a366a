import { describe, expect, it } from "vitest";
import { generateGraph } from "../../bench/graph-scale.ts";
import { createEngine } from "../../src/engine/engine.ts";
import { simulate } from "../../src/engine/simulate.ts";
import type { EngineEvent } from "../../src/engine/types.ts";
import { parseGraph } from "../../src/graph/load.ts";
import {
  agentText,
  annotations,
  BODY_LIMIT,
  codeBlock,
  integrationPrBody,
  planSummary,
  taskPrTitle,
  unannotated,
} from "../../src/github/render.ts";
import { runHeadline, statusComment, waitingFor } from "../../src/github/status-comment.ts";
import { duration } from "../../src/github/words.ts";
import { workstreamState } from "../../src/github/workstream-chart.ts";
import { chartLevel, mermaidChart } from "../../src/plan/mermaid.ts";
import { buildPlan } from "../../src/plan/plan.ts";
import { graphOf, graphYaml } from "../support/graphs.ts";
import { runAt, workstreamsGraph } from "../support/runs.ts";

const links = { trackingIssue: 7, job: (id: string) => `https://github.com/o/r/actions/runs/${id}` };

describe("text people read on GitHub", () => {
  it("keeps what an agent wrote from leaking secrets, hiding text, breaking the page or pinging people", () => {
    const text = agentText(
      `done <!-- hidden --> \`\`\`x\`\`\` ghs_${"a".repeat(36)} cc @octocat and @org/team`,
    );
    expect(text).toBe("done  hidden  ʼʼʼxʼʼʼ *** cc @\u200boctocat and @\u200borg/team");
    // Cut within the length, at a word boundary where there is one, and marked.
    expect(agentText("x".repeat(50), 10)).toBe(`${"x".repeat(8)} …`);
    expect(agentText("the gate failed in module seven", 24)).toBe("the gate failed in …");
  });
});

describe("the status comment", () => {
  it("shows a failure at row 9,000 of a 10,000-task run, under its workstream, within one comment", () => {
    const { plan, state } = runAt(generateGraph(10_000), {
      t9000: { status: "failed", reason: "Completion gate failed after 5 attempt(s): pytest -q" },
      t9001: { status: "running", job: "991" },
    });
    const body = statusComment(plan, state, 120_000, links);
    expect(body.length).toBeLessThanOrEqual(BODY_LIMIT);
    const attention = body.slice(body.indexOf("#### Needs attention"), body.indexOf("<details>"));
    expect(attention).toContain(
      "| `t9000` | `ws_90` | Completion gate failed after 5 attempt(s): pytest -q |  |",
    );
    expect(attention).toContain("**`ws_90`** (");
    expect(attention).toContain("| `t9001` | running |");
    expect(body).toContain(
      "- **Waiting for you**: `t9000` failed (Completion gate failed after 5 attempt(s): pytest -q). `/agentrelay retry TASK` runs a failed task again (what it blocks goes on once it merges).",
    );
    expect(body).toContain("- Waiting for 1 job: [`t9001`](https://github.com/o/r/actions/runs/991).");
    expect(body).toMatch(
      /… and [\d,]+ more tasks \([\d,]+ to do; the full state is on the `agentrelay-state\/scale-10000` branch\)/,
    );
    // 100 workstreams are too many to draw even one node each: a table has them.
    expect(body).not.toContain("```mermaid");
    expect(body).toContain("<details><summary>Workstreams (100; too many to draw readably)</summary>");
    expect(body).toContain("| `ws_99` | not started | 0 of 100 |  |  |  | 100 |");
  });

  it("says who must act on an integration PR left for a person, why, and how many tasks wait for it", () => {
    const text = graphYaml(
      [
        { id: "write_concerns", ws: "ws_a" },
        { id: "later", ws: "ws_b", deps: ["write_concerns"] },
      ],
      [{ id: "ws_a", autoMerge: true }, { id: "ws_b" }],
    );
    const { plan, state } = runAt(text, { write_concerns: { status: "merged" } });
    state.tasks.write_concerns!.concerns = ["the API shape is wrong"];
    Object.assign(state.workstreams.ws_a!, {
      status: "pr_open",
      autoMergeSkipped: true,
      pr: { number: 5, url: "https://github.com/o/r/pull/5" },
    });
    expect(waitingFor(plan, state, links)).toEqual([
      "- **Waiting for you**: merge [#5](https://github.com/o/r/pull/5) (`ws_a` into `main`); a design concern was raised in `write_concerns`; 1 task to do waits for it. Close it instead to fail the workstream.",
    ]);
    expect(statusComment(plan, state, 0, links)).toContain(
      "### agentrelay run `g/1`: waiting for you (1 to do, 1 merged)",
    );
    // The PR's own body counts the same task.
    expect(integrationPrBody(plan, state, "ws_a")).toContain(
      "An agent raised a design concern (below), so the app leaves this PR for you: review it, then merge it (the run goes on) or close it (the workstream fails). 1 task of the run waits for this merge.",
    );
  });

  it("says which conflicts an agent is resolving, and which wait for a person, with the branches to merge", () => {
    const graph = parseGraph(
      "g.yaml",
      graphYaml(
        [
          { id: "a", ws: "left" },
          { id: "b", ws: "right" },
        ],
        [
          { id: "left", autoMerge: true },
          { id: "right", autoMerge: true },
        ],
        "max_concurrency: 2",
      ),
    );
    const engine = createEngine(graph);
    const { state } = engine.start(0);
    Object.assign(state.workstreams.left!, {
      status: "pr_open",
      integration: "open",
      pr: { number: 9, url: "https://github.com/o/r/pull/9" },
    });
    engine.apply(state, { type: "integration_conflicted", workstream: "left", files: ["calc.py"], at: 1 });
    engine.apply(state, { type: "resolution_dispatched", workstream: "left", n: 1, job: "77", at: 2 });
    // b's PR conflicted three times: past the two resolutions it may have, it waits for a person.
    const simulated = simulate(graph, { taskConflicts: new Map([["b", 3]]), reviewerMerges: false });
    Object.assign(state.tasks.b!, simulated.state.tasks.b);
    const plan = buildPlan(graph);
    const waits = waitingFor(plan, state, links);
    // A person's part comes first, then what moves on its own.
    expect(waits.findIndex((l) => l.includes("by hand"))).toBeLessThan(
      waits.findIndex((l) => l.startsWith("- Resolving")),
    );
    expect(waits).toContain(
      "- Resolving conflicts (an agent merges, then the PR merges again): [#9](https://github.com/o/r/pull/9): [attempt 1](https://github.com/o/r/actions/runs/77) merges `main` into `agentrelay/g/left/integration` (`calc.py`).",
    );
    expect(waits).toContain(
      `- **Waiting for you**: [#${state.tasks.b!.pr!.number}](${state.tasks.b!.pr!.url}) (\`b\`): merge \`agentrelay/g/right/integration\` into \`agentrelay/g/b\` by hand: they conflict in \`simulated.txt\` (2 resolution attempts did not settle them).`,
    );
    expect(waits.join("\n")).not.toMatch(/Waiting for GitHub|task PR to merge/);
    // The row points under its table, where what to do comes first: a cut keeps the branch to merge.
    const comment = statusComment(plan, state, 5, links);
    expect(comment).toContain("| `b` | waits for you: merge by hand, as said under this table |");
    expect(comment).toContain(
      "\n- `b` waits for you: merge `agentrelay/g/right/integration` into `agentrelay/g/b` by hand: they conflict in `simulated.txt` (2 resolution attempts did not settle them).\n",
    );
    // An agent is at work: the run is running, not waiting for review.
    Object.assign(state.tasks.b!, { status: "merged" });
    Object.assign(state.tasks.a!, { status: "merged" });
    expect(runHeadline(plan, state)).toBe("running (2 merged)");
  });

  it("names five task PRs whose conflicts wait for a person, and counts the rest", () => {
    const ids = Array.from({ length: 7 }, (_, i) => `t${i}`);
    const graph = parseGraph(
      "g.yaml",
      graphYaml(
        ids.map((id) => ({ id, ws: `w_${id}` })),
        ids.map((id) => ({ id: `w_${id}` })),
        "max_concurrency: 7",
      ),
    );
    const { state } = simulate(graph, { taskConflicts: new Map(ids.map((id) => [id, 3])) });
    const waits = waitingFor(buildPlan(graph), state, links);
    expect(waits.filter((l) => l.includes("by hand"))).toHaveLength(5);
    expect(waits.at(-1)).toBe("- **Waiting for you**: 2 more task PRs with conflicts (below).");
  });

  it("counts and names the tasks a conflict left to a person holds, also where a task failed", () => {
    // In one workstream: t0 fails, t1's PR conflicts past its resolutions, t2 and t3 wait behind t1.
    const graph = graphOf(
      [
        { id: "t0", ws: "w" },
        { id: "t1", ws: "w" },
        { id: "t2", ws: "w", deps: ["t1"] },
        { id: "t3", ws: "w", deps: ["t2"] },
      ],
      [{ id: "w", autoMerge: true }],
    );
    const { state, plan } = simulate(graph, {
      failures: new Map([["t0", Infinity]]),
      taskConflicts: new Map([["t1", 3]]),
    });
    expect(state.tasks.t1!.status).toBe("pr_open");
    const pr = state.tasks.t1!.pr!;
    const waits = waitingFor(plan, state, links);
    expect(waits).toContainEqual(
      expect.stringMatching(
        new RegExp(`^- \\*\\*Waiting for you\\*\\*: \\[#${pr.number}\\].*; 2 tasks to do wait for it\\.$`),
      ),
    );
    // The workstream's heading names the failure and the PR that waits for a person: retrying t0
    // alone would leave t2 and t3 where they are.
    const heading = workstreamState(plan, state, "w");
    expect(heading).toBe(`\`t0\` failed; [#${pr.number}](${pr.url}) (\`t1\`) waits for you: conflicts`);
    const body = statusComment(plan, state, 0, links);
    expect(body).toContain(`**\`w\`** (${heading})`);
    // Their rows say what they wait for.
    expect(body).toContain(`| \`t2\` | \`w\` | to do, waits for [#${pr.number}](${pr.url}) |`);
  });

  it("names a workstream's own failure, not the first block it was given", () => {
    // ws_b's b2 is blocked by a1 first (stored as the workstream's reason); then its own b1 fails.
    const graph = graphOf(
      [
        { id: "a1", ws: "ws_a" },
        { id: "b1", ws: "ws_b" },
        { id: "b2", ws: "ws_b", deps: ["a1"] },
      ],
      [{ id: "ws_a" }, { id: "ws_b" }],
      "max_concurrency: 2",
    );
    const engine = createEngine(graph);
    const { state } = engine.start(0);
    const send = (event: EngineEvent) => engine.apply(state, event);
    send({ type: "workstream_prepared", workstream: "ws_a", at: 1 });
    send({ type: "workstream_prepared", workstream: "ws_b", at: 1 });
    send({ type: "job_failed", task: "a1", attempt: 1, reason: "tests failed", at: 2 });
    send({ type: "job_failed", task: "b1", attempt: 1, reason: "lint failed", at: 3 });
    expect(state.workstreams.ws_b!.reason).toBe("blocked: task 'a1' failed");
    const plan = buildPlan(graph);
    expect(workstreamState(plan, state, "ws_b")).toBe("`b1` failed");
    expect(statusComment(plan, state, 5, links)).not.toContain("blocked: task");
  });

  it("names five integration PRs to merge, the one that holds the most first, and counts the rest", () => {
    const ids = Array.from({ length: 8 }, (_, i) => `t${i}`);
    const graph = graphOf(
      [...ids.map((id) => ({ id, ws: `w${id}` })), { id: "last", ws: "wlast", deps: ["t7"] }],
      [...ids.map((id) => ({ id: `w${id}` })), { id: "wlast" }],
      "max_concurrency: 8",
    );
    const { state, plan } = simulate(graph, { reviewerMerges: false });
    const waits = waitingFor(plan, state, links);
    const merges = waits.filter((l) => l.startsWith("- **Waiting for you**: merge "));
    expect(merges).toHaveLength(5);
    expect(merges[0]).toMatch(
      /\(`wt7` into `main`\); `auto_merge` is off for this workstream; 1 task to do waits for it\./,
    );
    expect(waits.at(-1)).toMatch(
      /^- \*\*Waiting for you\*\*: 3 more integration PRs to merge: \[#\d+\]\(sim:\/\/pull\/\d+\), \[#\d+\]\(sim:\/\/pull\/\d+\), \[#\d+\]\(sim:\/\/pull\/\d+\)\.$/,
    );
  });

  it("caps spent budgets at five lines, and counts each task to do once, so that the counts add up", () => {
    const graph = graphOf(
      Array.from({ length: 7 }, (_, i) => ({ id: `t${i}`, ws: `w${i}` })).flatMap((t, i) => [
        t,
        { id: `u${i}`, ws: `w${i}`, deps: [`t${i}`] },
      ]),
      Array.from({ length: 7 }, (_, i) => ({ id: `w${i}`, autoMerge: true, extra: "max_cost_usd: 0.4" })),
      "max_concurrency: 7",
    );
    const { state, plan } = simulate(graph, { costPerAttempt: 300_000 });
    const waits = waitingFor(plan, state, links);
    expect(waits.filter((l) => l.includes("budget nearly spent"))).toHaveLength(5);
    expect(waits).toContain("- **Waiting for you**: 2 more spent budgets; 2 tasks to do wait for them.");
    const counted = waits.flatMap((l) =>
      [...l.matchAll(/([\d,]+) tasks? to do waits? for/g)].map((m) => Number(m[1])),
    );
    const todo = Object.values(state.tasks).filter((t) => t.status === "pending").length;
    expect(counted.reduce((a, b) => a + b, 0)).toBe(todo);
    expect(runHeadline(plan, state)).toContain(`${todo} to do`);
  });

  it("says what failed, not that it waits, once the run is done with failures", () => {
    const graph = graphOf([{ id: "a" }, { id: "b", deps: ["a"] }]);
    const { state, plan } = simulate(graph, { failures: new Map([["a", Infinity]]) });
    expect(runHeadline(plan, state)).toBe("done with failures (1 failed, 1 blocked)");
    const body = statusComment(plan, state, 0, links);
    expect(body).not.toContain("Waiting for you");
    expect(body).toContain(
      "- **Failed**: 1 task blocked by 1 failure: `a` failed (simulated failure), blocking 1.",
    );
  });

  it("draws five tasks task by task, and ten unconnected workstreams of 30 by workstream, with a legend", () => {
    const five = runAt(workstreamsGraph(1, 5), { w0_t0: { status: "running" } });
    expect(chartLevel(five.plan)).toBe("tasks");
    const small = statusComment(five.plan, five.state, 0, links);
    expect(small).toContain("<details><summary>DAG</summary>");
    expect(small).toContain("_Outlines: red, failed (retry it); amber, waits for you");
    const wide = runAt(workstreamsGraph(10, 30), { w0_t0: { status: "failed", reason: "x" } });
    wide.state.workstreams.ws_0!.status = "failed";
    for (let i = 1; i < 30; i++)
      Object.assign(wide.state.tasks[`w0_t${i}`]!, {
        status: "blocked",
        reason: `dependency 'w0_t${i - 1}' failed`,
      });
    expect(chartLevel(wide.plan)).toBe("workstreams");
    const chart = statusComment(wide.plan, wide.state, 0, links);
    // A node says what its failure blocks.
    expect(chart.split("\n").filter((l) => l.includes("w0["))).toEqual([
      '  w0["ws_0<br/><i>0/30 done, 1 failed, 29 blocked</i>"]:::ws0',
    ]);
    expect(chart).toContain(
      "<summary>Workstreams (too large to draw task by task: 300 tasks, 290 dependencies, 30 waves)</summary>",
    );
    // Ten unconnected workstreams do not fit side by side: they are stacked in readable rows.
    expect(chart).toContain("  w0 ~~~ w");
  });

  it("says a graph is too large to draw task by task only when it is, not when its ids are long", () => {
    const graph = parseGraph(
      "g.yaml",
      graphYaml(
        Array.from({ length: 12 }, (_, i) => ({
          id: `implement_the_configuration_parser_part_${i}`,
          ws: `w${i % 6}`,
        })),
        Array.from({ length: 6 }, (_, i) => ({ id: `w${i}` })),
      ),
    );
    const chart = mermaidChart(buildPlan(graph));
    expect(chart.level).toBe("workstreams");
    expect(chart.why).toBe("drawn task by task, its text would be too small to read");
    expect(planSummary(buildPlan(graph))).toContain(
      "_Drawn by workstream: drawn task by task, its text would be too small to read._",
    );
  });

  it("outlines who must act: a merge or a conflict for a person amber, never as at work or blocked", () => {
    const { plan, state } = runAt(workstreamsGraph(10, 30), {
      w1_t0: { status: "failed", reason: "x" },
      w2_t0: { status: "running" },
      w4_t0: { status: "pr_open" },
    });
    const pr = (n: number) => ({ number: n, url: `https://github.com/o/r/pull/${n}` });
    // ws_0 is done and its PR waits for a person (an agent raised a concern); ws_3 merged.
    for (const ws of ["ws_0", "ws_3"])
      for (const id of plan.tasksByWorkstream.get(ws)!) state.tasks[id]!.status = "merged";
    Object.assign(state.workstreams.ws_0!, {
      status: "pr_open",
      integration: "open",
      autoMergeSkipped: true,
      pr: pr(1),
    });
    Object.assign(state.workstreams.ws_3!, { status: "merged", integration: "merged", unfinished: 0 });
    // ws_4's first task PR conflicts and waits for a person.
    Object.assign(state.tasks.w4_t0!, {
      pr: pr(2),
      reason:
        "merge `x` into `y` by hand: they conflict in `a.py` (2 resolution attempts did not settle them)",
      conflict: { files: ["a.py"], resolutions: [], toPerson: true },
    });
    state.workstreams.ws_4!.activeTask = "w4_t0";
    // The workstreams' own statuses, as the engine keeps them.
    Object.assign(state.workstreams.ws_1!, { status: "failed" });
    for (const ws of ["ws_2", "ws_4"]) state.workstreams[ws]!.status = "active";
    for (let i = 1; i < 30; i++)
      Object.assign(state.tasks[`w1_t${i}`]!, {
        status: "blocked",
        reason: `dependency 'w1_t${i - 1}' failed`,
      });
    const body = statusComment(plan, state, 0, links);
    const node = (i: number) => body.split("\n").find((l) => l.startsWith(`  w${i}[`));
    const mark = (i: number) => new RegExp(`^  class w${i} (\\w+)$`, "m").exec(body)?.[1];
    expect([0, 1, 2, 3, 4, 5].map(mark)).toEqual([
      "waiting",
      "broken",
      "active",
      "done",
      "waiting",
      undefined,
    ]);
    expect(node(0)).toContain("30/30 done, merge waits for you");
    expect(node(1)).toContain("0/30 done, 1 failed, 29 blocked");
    expect(node(4)).toContain("0/30 done, 1 at work, a PR conflict");
  });
});

describe("bodies within GitHub's limits", () => {
  it("keeps a 40-task workstream's integration PR body under 65,536 characters, concerns first", () => {
    const { plan, state } = runAt(workstreamsGraph(1, 40), {});
    for (const t of Object.values(state.tasks)) {
      t.status = "merged";
      t.pr = { number: 1, url: "https://github.com/o/r/pull/1" };
      t.summary = "A long summary of the work. ".repeat(150);
      t.opsConcerns = ["the gate is slow ".repeat(20)];
    }
    const body = integrationPrBody(plan, state, "ws_0");
    expect(body.length).toBeLessThanOrEqual(BODY_LIMIT);
    expect(body.match(/^- `w0_t\d+`/gm)).toHaveLength(40);
    expect(body.match(/^### w0_t\d+$/gm)).toHaveLength(40);
    expect(body.match(/<summary>Summary<\/summary>/g)!.length).toBeGreaterThan(10);
  });

  it("counts with thousands separators the tasks an integration PR body leaves out", () => {
    const { plan, state } = runAt(workstreamsGraph(1, 1_200), {});
    const body = integrationPrBody(plan, state, "ws_0", 5_000);
    expect(body).toMatch(/^- … and \d,\d{3} more tasks \(see the task PRs\)\.$/m);
  });

  it("cuts the plan of a 10,000-task graph at a line and keeps what is dispatched first", () => {
    const graph = parseGraph("big.yaml", generateGraph(10_000), { limits: { maxBytes: 64 << 20 } });
    const summary = planSummary(buildPlan(graph), 30_000);
    expect(summary.length).toBeLessThanOrEqual(30_000);
    expect(summary).toContain("**scale-10000** (agentrelay): 10,000 tasks in 100 workstreams, ");
    expect(summary).toContain("**Dispatched first**: `t0` → `agentrelay/scale-10000/t0`");
    expect(summary.trimEnd().split("\n").at(-3)).toMatch(/^… and [\d,]+ more waves\.$/);
    // Every wave line is whole: numbered, with its tasks listed or counted.
    for (const line of summary.split("\n").filter((l) => /^\d+\. /.test(l)))
      expect(line).toMatch(/`t\d+`( and [\d,]+ more)?$/);
    expect(createEngine(graph).plan.order).toHaveLength(10_000);
  });

  it("promises only the dispatches a budget allows", () => {
    const plan = buildPlan(
      graphOf(
        [
          { id: "base_calc", ws: "x" },
          { id: "other", ws: "y" },
        ],
        [{ id: "x" }, { id: "y" }],
        "max_concurrency: 2\nmax_cost_usd: 0.5",
      ),
    );
    // $0.50 holds one attempt's floor ($0.30), not two: the second waits for what the first gives back.
    expect(planSummary(plan)).toContain(
      "**Dispatched first**: `base_calc` → `agentrelay/g/base_calc` (up to $0.30). Then, as the budget allows: `other` (an attempt starts with at least its floor, and those running hold the rest until they end)\n",
    );
  });
});

describe("words and cuts", () => {
  it("cuts titles at a word with a marker, and lists only what starts first", () => {
    const graph = parseGraph(
      "g.yaml",
      graphYaml(
        Array.from({ length: 12 }, (_, i) => ({ id: `t${i}`, ws: `w${i % 6}` })),
        Array.from({ length: 6 }, (_, i) => ({ id: `w${i}` })),
        "max_concurrency: 4",
      ).replace(
        /description: do t\d+/g,
        "description: Implement the parser for the configuration language with its error recovery and tests",
      ),
    );
    const plan = buildPlan(graph);
    expect(taskPrTitle(plan.tasks.get("t0")!)).toBe(
      "agentrelay: t0: Implement the parser for the configuration language with its error recovery …",
    );
    // Twelve tasks are ready, one per workstream may run, four at once: those four (in canonical
    // order) are listed.
    expect(planSummary(plan)).toContain(
      "**Dispatched first** (4 of the 12 ready tasks: one per workstream, `max_concurrency: 4`): `t0` → `agentrelay/g/t0`, `t1` → `agentrelay/g/t1`, `t10` → `agentrelay/g/t10`, `t11` → `agentrelay/g/t11`\n",
    );
  });

  it("says a task PR is being opened, not that 'its PR' waits to merge", () => {
    const { plan, state } = runAt(workstreamsGraph(1, 2), { w0_t0: { status: "pr_open" } });
    expect(waitingFor(plan, state, links)).toEqual([
      "- Opening 1 task PR: `w0_t0`.",
      "- 1 task to do waits its turn behind work that moves on its own.",
    ]);
    state.tasks.w0_t0!.pr = { number: 3, url: "https://github.com/o/r/pull/3" };
    expect(waitingFor(plan, state, links)[0]).toBe(
      "- Waiting for 1 task PR to merge (required checks or reviews): [#3](https://github.com/o/r/pull/3).",
    );
  });

  it("writes every duration in words, in one form", () => {
    const durations = [
      42_000,
      40 * 60_000,
      185_000,
      116 * 3_600_000 + 11 * 60_000,
      141 * 3_600_000 + 37 * 60_000,
    ];
    expect([...durations, 1_234 * 86_400_000].map(duration)).toEqual([
      "42 s",
      "40 min",
      "3 min 5 s",
      "4 days 20 h",
      "5 days 21 h",
      "1,234 days",
    ]);
  });

  it("puts an integration PR's concerns before its tasks", () => {
    const { plan, state } = runAt(workstreamsGraph(1, 3), {});
    state.tasks.w0_t2!.concerns = ["the schema is not versioned"];
    const body = integrationPrBody(plan, state, "ws_0");
    expect(body.indexOf("## Concerns")).toBeGreaterThan(0);
    expect(body.indexOf("## Concerns")).toBeLessThan(body.indexOf("## Tasks"));
  });

  it("counts every problem, and says how many get no annotation", () => {
    const issues = Array.from({ length: 202 }, (_, i) => ({
      file: "g.yaml",
      line: i + 1,
      column: 1,
      path: `tasks[${i}]`,
      message: "is required",
    }));
    expect(annotations(issues)).toHaveLength(50);
    expect(unannotated(issues)).toBe(
      "152 of 202 problems get no annotation (GitHub takes 50 a check run); all are listed here.",
    );
    expect(unannotated(issues.slice(0, 50))).toBeNull();
  });

  it("keeps gate output as it was, for copy and paste: no zero-width space, a fence it cannot close", () => {
    const output = "FAILED test_mail.py - assert 'a@b.io' == '@team'\n```\nend";
    const block = codeBlock(output, 2_000);
    expect(block).toEqual(["````text", output, "````"]);
    expect(block.join("\n")).not.toContain("\u200b");
    expect(codeBlock(`first line\n${"x".repeat(30)}\nlast line`, 20)).toEqual([
      "```text",
      "…\nlast line",
      "```",
    ]);
  });
});

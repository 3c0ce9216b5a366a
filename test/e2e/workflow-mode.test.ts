/**
 * Workflow-only mode end to end (`init --no-app`): no app server; each event starts a fresh process
 * of the bundled orchestrator with the event's JSON, through the concurrency group the installed
 * workflow names (one running, one pending, older pending runs cancelled); jobs act with their own
 * token and hand their reports over as artifacts of their runs. The diamond runs with the bundled
 * Action (its agent the tests' stand-in for Claude Code: the orchestrator is what is shown); a wider
 * graph runs with scripted jobs while deliveries are duplicated, reordered and dropped. Both end as the app's runs do: every task merged once, nothing lost, nothing done twice.
 * (The 300-task graph runs in the bench: `npm run bench -- workflow-mode`.)
 */
import { afterEach, describe, expect, it } from "vitest";
import { chainsGraph, DIAMOND } from "../../harness/graphs.ts";
import { e2eAgent } from "../../harness/e2e-agent.ts";
import { type Standin, startStandin } from "../../harness/standin.ts";

let standin: Standin | undefined;
afterEach(async () => {
  await standin?.close();
  standin = undefined;
});

/** The merges of task and integration PRs on main (not the merges that brought branches up to date). */
function merges(s: Standin): string[] {
  return s
    .git("log", "--merges", "--format=%s", "main")
    .split("\n")
    .filter((m) => m.startsWith("Merge task") || m.startsWith("Integrate workstream"))
    .sort();
}

describe("workflow-only mode on a loopback GitHub", () => {
  it("runs the diamond with the bundled Action, as the app does", async () => {
    standin = await startStandin({ script: e2eAgent(), orchestrator: "workflow", agent: "stand-in" });
    await standin.push({ ".workflow/diamond.yaml": DIAMOND });
    await standin.idle();
    const state = standin.gh.state("diamond/1");
    expect(state.outcome).toBe("succeeded");
    for (const task of ["a", "b", "c", "d"])
      expect(standin.git("show", `main:notes/${task}.md`)).toContain(`task ${task}`);
    expect(merges(standin)).toEqual(
      [..."abcd"].flatMap((t) => [`Merge task ${t}`, `Integrate workstream ws_${t}`]).sort(),
    );
    expect(standin.gh.dispatches.map((d) => `${d.inputs.task}/${d.inputs.attempt}/${d.inputs.tier}`)).toEqual(
      ["a/1/standard", "b/1/standard", "c/1/standard", "d/1/standard"],
    );
    // The status comment says plainly what GITHUB_TOKEN cannot do, and the fix.
    const status = standin.gh.comments.find((c) => c.body.includes("agentrelay:status"))!.body;
    expect(status).toContain("done (4 merged)");
    expect(status).toContain("GitHub starts no workflow for PRs it opens");
    expect(status).toContain("AGENTRELAY_APP_PRIVATE_KEY");
    // Nothing but the jobs' own tokens and artifacts: no app endpoint was called.
    expect(standin.jobRequests).toEqual([]);
    expect(standin.gh.artifacts.map((a) => a.name)).toEqual(Array(4).fill("agentrelay-report"));
    const runs = standin.runs!.runs;
    console.log(
      runs.map((r) => `${r.n} ${r.event} ${r.group} ${r.state} ${Math.round(r.ms ?? 0)}ms`).join("\n"),
    );
    expect(runs.filter((r) => r.state === "done").every((r) => r.code === 0)).toBe(true);
    expect(runs.filter((r) => r.state === "done").length).toBeLessThanOrEqual(3 * 4 + 1);
  });

  it("a wider graph with scripted jobs, its events duplicated, reordered and some dropped", async () => {
    let n = 0;
    standin = await startStandin({
      script: e2eAgent(),
      orchestrator: "workflow",
      jobs: "scripted",
      // A third of the jobs' completions never arrive; the rest arrive twice, out of order.
      route: (d) => (d.name === "workflow_run" && n++ % 3 === 2 ? "drop" : "duplicate"),
      delay: () => (n * 37) % 120,
    });
    await standin.push({ ".workflow/chains.yaml": chainsGraph(8, 4) });
    // The scheduled run (the reconciler) picks up what the dropped events would have said.
    await standin.idle();
    for (let tick = 0; tick < 20 && standin.gh.state("chains/1").outcome === null; tick++) {
      standin.schedule();
      await standin.idle();
    }
    expect(standin.gh.state("chains/1").outcome).toBe("succeeded");
    const keys = standin.gh.dispatches.map((d) => `${d.inputs.task}/${d.inputs.attempt}`);
    expect(keys.sort()).toEqual(Array.from({ length: 8 }, (_, t) => `t${t}/1`).sort());
    expect(merges(standin)).toEqual(
      [
        ...Array.from({ length: 8 }, (_, t) => `Merge task t${t}`),
        ...Array.from({ length: 4 }, (_, w) => `Integrate workstream ws_${w}`),
      ].sort(),
    );
    expect(standin.gh.pulls.every((p) => p.merged)).toBe(true);
    // GitHub's concurrency group did cancel pending runs, and nothing was lost for it.
    const states = standin.runs!.runs.map((r) => r.state);
    expect(states).toContain("cancelled");
    expect(standin.runs!.runs.filter((r) => r.state === "done").every((r) => r.code === 0)).toBe(true);
  });
});

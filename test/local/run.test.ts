import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoAgent } from "../../src/scripted/demo-agent.ts";
import { git } from "../../src/attempt/git.ts";
import { runLocal } from "../../src/local/run.ts";
import {
  type ScriptedModelServer,
  startScriptedModel,
  userPrompts,
} from "../../src/scripted/model-server.ts";
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
  // The demo diamond's whole run (task merges, integrations, the order, running again changing
  // nothing) is checked once, on `npm run demo` (test/cli/cli.test.ts).

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

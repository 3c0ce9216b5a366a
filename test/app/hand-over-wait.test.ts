/**
 * Without an app, a task run's last job (its hand-over) dispatches the orchestrator with the run's id
 * while the run is still in progress; the orchestrator waits for that run to end, up to two minutes,
 * before it reconciles (which reads the run's report). On a scripted clock: no real wait.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repository } from "../../harness/app.ts";
import { FakeGitHub } from "../../harness/fake-github.ts";
import { orchestrate } from "../../src/app/workflow.ts";
import type { Clock } from "../../src/github/write-pacing.ts";

const RUN = 777;
let gh: FakeGitHub;
beforeEach(() => {
  gh = new FakeGitHub();
  gh.workflowRuns.set(RUN, {
    id: RUN,
    display_title: "agentrelay hello/1 hello_note #1",
    status: "in_progress",
    conclusion: null,
  });
});
afterEach(() => gh.expectNoViolations());

/** A clock that moves only when the orchestrator sleeps; `atMs` runs once the clock reaches it. */
function scriptedClock(atMs: number, then: () => void): Clock & { slept: () => number } {
  const start = 1_800_000_000_000;
  let now = start;
  return {
    now: () => now,
    sleep: async (ms) => {
      now += ms;
      if (now - start >= atMs) then();
    },
    slept: () => now - start,
  };
}

async function dispatched(clock: Clock, inputs: Record<string, string>) {
  const env = { GITHUB_TOKEN: "ghs_orchestrator", GITHUB_REPOSITORY: `${gh.owner}/${gh.repo}` };
  const event = { name: "workflow_dispatch", payload: { inputs, repository: repository(gh) } };
  return orchestrate(env, { fetch: gh.fetch, clock, event, log: () => undefined });
}

/** The calls asking for the handed-over run, and the index of the first call after them. */
function waited() {
  const paths = gh.calls.map((c) => `${c.method} ${c.path.split("?")[0]}`);
  const asks = paths.filter((p) => p === `GET /repos/octo/demo/actions/runs/${RUN}`).length;
  const last = paths.lastIndexOf(`GET /repos/octo/demo/actions/runs/${RUN}`);
  return {
    asks,
    first: paths.indexOf(`GET /repos/octo/demo/actions/runs/${RUN}`),
    last,
    total: paths.length,
  };
}

describe("the orchestrator's wait for the task run that handed over", () => {
  it("waits until the run completed, then reconciles", async () => {
    const clock = scriptedClock(30_000, () =>
      Object.assign(gh.workflowRuns.get(RUN)!, { status: "completed" }),
    );
    const { failed } = await dispatched(clock, { "task-run": String(RUN) });
    expect(failed).toEqual([]);
    // Asked every 5 s: at 0, 5, ..., 30 s; it completed at 30 s.
    expect(clock.slept()).toBe(30_000);
    const { asks, last, total } = waited();
    expect(asks).toBe(7);
    // Reconciling (which reads the run's report) came after the run was seen completed.
    expect(total).toBeGreaterThan(last + 1);
  });

  it("waits two minutes at most for a run that does not end, then goes on", async () => {
    const clock = scriptedClock(Infinity, () => undefined);
    const { failed } = await dispatched(clock, { "task-run": String(RUN) });
    expect(failed).toEqual([]);
    expect(clock.slept()).toBe(120_000);
    expect(waited().asks).toBe(25);
  });

  it("waits for nothing on a dispatch by hand, or for an id that is no run of the repository", async () => {
    const clock = scriptedClock(Infinity, () => undefined);
    await dispatched(clock, {});
    expect(waited().asks).toBe(0);
    await dispatched(clock, { "task-run": "1; rm -rf /" });
    expect(waited().asks).toBe(0);
    await dispatched(clock, { "task-run": "9999" });
    expect(gh.calls.filter((c) => c.path.includes("/actions/runs/9999")).map((c) => c.status)).toEqual([404]);
    expect(clock.slept()).toBe(0);
  });
});

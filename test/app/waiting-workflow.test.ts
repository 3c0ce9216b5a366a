/**
 * Work that waited for GitHub's write limit without an app (security case 10, workflow-only mode),
 * where the scheduled workflow runs only while a run is active: a graph pushed to an idle repository
 * (the schedule disabled) while GitHub refuses writes is started once the limit frees, because the
 * orchestrator's run that met the limit enables the schedule, and no run disables it while the push
 * waits; where GitHub refuses even that, the run says in one line to re-run it. In simulated time.
 */
import { afterEach, describe, expect, it } from "vitest";
import { chainsGraph } from "../../harness/graphs.ts";
import { e2eAgent } from "../../harness/e2e-agent.ts";
import { isWrite } from "../../harness/fake-rate-limits.ts";
import { type Standin, startStandin } from "../../harness/standin.ts";
import { SCHEDULE_WORKFLOW } from "../../src/app/workflow.ts";

let standin: Standin | undefined;
afterEach(async () => {
  await standin?.close();
  standin = undefined;
});

const MINUTE = 60_000;
const RUN = "chains/1";

/**
 * An idle repository without an app, its schedule disabled as the orchestrator leaves it, and GitHub
 * refusing writes for the next 40 minutes (its hour's writes spent elsewhere): every write, or every
 * write but the schedule's enabling (which GitHub may not count as content).
 */
async function spentIdle(refused: "every write" | "content"): Promise<Standin> {
  const s = await startStandin({
    script: e2eAgent(),
    orchestrator: "workflow",
    jobs: "scripted",
    simulated: {},
    memory: true,
  });
  standin = s;
  s.gh.settings.disabledWorkflows.add(SCHEDULE_WORKFLOW);
  const until = s.gh.clock.now() + 40 * MINUTE;
  s.gh.fault = (call) => {
    const now = s.gh.clock.now();
    if (now >= until || !isWrite(call)) return null;
    if (refused === "content" && call.path.endsWith(`/${SCHEDULE_WORKFLOW}/enable`)) return null;
    const message =
      "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.";
    return [403, { message }, { "retry-after": String(Math.ceil((until - now) / 1000)) }];
  };
  return s;
}

/** The orchestrator's run for the push, once it ended. */
async function pushRun(s: Standin) {
  await s.push({ ".workflow/chains.yaml": chainsGraph(1, 1) });
  const ended = () => s.runs!.runs.find((r) => r.event === "push" && r.state === "done");
  await s.timeline!.run(() => ended() !== undefined, 5 * MINUTE);
  return ended()!;
}

const scheduleOn = (s: Standin) => !s.gh.settings.disabledWorkflows.has(SCHEDULE_WORKFLOW);

describe("a pushed graph that met the write limit, without an app", () => {
  it("enables the schedule, whose run starts it once the limit frees; then the schedule goes off", async () => {
    const s = await spentIdle("content");
    const run = await pushRun(s);
    expect(run.code).toBe(1);
    expect(run.log).toMatch(
      /push: GitHub.s (write|rate) limit for this installation is spent for \d+ minutes/,
    );
    expect(scheduleOn(s)).toBe(true);
    expect(s.gh.branches.has("agentrelay-state/chains")).toBe(false);
    // The scheduled runs while the limit holds change nothing and leave the schedule on; the first
    // after it starts the run, which goes to its end.
    expect(await s.runToEnd(RUN, 3 * 60 * MINUTE)).toBe("succeeded");
    expect(s.gh.dispatches).toHaveLength(1);
    expect(s.cron.started).toBeGreaterThanOrEqual(3);
    // Nothing active, nothing waiting: the next reconciling run turns the schedule off again.
    await s.timeline!.run(() => !scheduleOn(s), 60 * MINUTE);
    expect(scheduleOn(s)).toBe(false);
    const started = s.cron.started;
    await s.timeline!.run(() => false, 2 * 60 * MINUTE);
    expect(s.cron.started).toBe(started);
    expect(s.gh.dispatches).toHaveLength(1);
  });

  it("says to re-run the orchestrator's run when GitHub refuses the schedule's enabling too", async () => {
    const s = await spentIdle("every write");
    const run = await pushRun(s);
    expect(run.code).toBe(1);
    const lines = (run.log ?? "").split("\n").filter((l) => l.includes(SCHEDULE_WORKFLOW));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^push waits for GitHub's limit, and agentrelay-schedule\.yml, which would carry it out, could not be enabled \(.*\): re-run this workflow run once the limit frees up$/,
    );
    expect(scheduleOn(s)).toBe(false);
  });
});

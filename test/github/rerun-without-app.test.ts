/**
 * "Re-run" on a task's check run without an app server (workflow-only mode): GitHub sends
 * check_run rerequested only to the app that made the check run, so the orchestrator workflow does
 * not listen for it, pressing it starts nothing, and the check run says what to comment instead. In
 * simulated time, with a registered app's token (whose check runs GitHub sends the button's event to
 * that app, which has no server here), and a first attempt that fails.
 */
import { afterEach, describe, expect, it } from "vitest";
import { chainsGraph } from "../../harness/graphs.ts";
import { e2eAgent } from "../../harness/e2e-agent.ts";
import { type Standin, startStandin } from "../../harness/standin.ts";

let standin: Standin | undefined;
afterEach(async () => {
  await standin?.close();
  standin = undefined;
});

const HOUR = 3_600_000;

describe("Re-run on a task's check run without an app", () => {
  it("starts nothing, and the check run says to comment /agentrelay retry TASK", async () => {
    const s = await startStandin({
      script: e2eAgent(),
      orchestrator: "workflow",
      jobs: "scripted",
      simulated: {},
      memory: true,
      token: "app",
      scriptedOutcome: (_, attempt) => (attempt === 1 ? "failed" : "succeeded"),
    });
    standin = s;
    await s.push({ ".workflow/chains.yaml": `max_task_attempts: 1\n${chainsGraph(1, 1)}` });
    const check = () =>
      s.gh.checkRuns.find((c) => c.name === "agentrelay / t0" && c.conclusion === "failure");
    await s.timeline!.run(() => check() !== undefined && s.runs!.busy === 0, 2 * HOUR);
    const issue = s.gh.issues.find((i) => i.title.includes("chains"))!.number;
    expect(check()!.output!.summary).toContain(
      `To run it again: comment \`/agentrelay retry t0\` on the tracking issue #${issue} ("Re-run" here starts nothing without an agentrelay app: GitHub sends its event only to the app that made this check run).`,
    );
    expect(check()!.output!.summary).not.toContain('press "Re-run"');

    const runs = s.runs!.runs.length;
    const dispatches = s.gh.dispatches.length;
    await s.rerun(check()!.id);
    await s.timeline!.run(() => false, HOUR);
    expect(s.runs!.runs.length).toBe(runs);
    expect(s.gh.dispatches.length).toBe(dispatches);

    // What the check run says works.
    await s.comment(issue, "/agentrelay retry t0");
    await s.timeline!.run(() => s.gh.dispatches.length > dispatches, HOUR);
    expect(s.gh.dispatches.at(-1)!.inputs).toMatchObject({ task: "t0", attempt: "2" });
  });
});

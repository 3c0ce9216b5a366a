/**
 * Budgets on GitHub: a run whose budget is spent dispatches nothing more and says so on its status
 * comment; `/agentrelay budget +USD` from a writer raises it and the run goes on, once, however
 * often GitHub delivers the comment.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Harness, issueComment, runJob, startApp } from "../../harness/app.ts";
import { DIAMOND } from "../../harness/graphs.ts";
import type { RunState } from "../../src/engine/types.ts";

let h: Harness;
beforeEach(async () => {
  h = await startApp({ statusIntervalMs: 0 });
});
afterEach(() => h.close());

// The floor is lowered so that small amounts make the test (the default is four turns of Sonnet, $0.30).
const BUDGETED = DIAMOND.replace(
  "max_concurrency: 2",
  "max_concurrency: 2\nmax_cost_usd: 0.25\nmin_attempt_cost_usd: 0.05",
);

const comment = (body: string, login: string, id = 500) => issueComment(h, body, login, { id });

const statusBody = () => h.gh.comments.find((c) => c.body.includes("agentrelay:status"))!.body;

describe("a run with a budget on GitHub", () => {
  it("waits when the budget is spent and goes on once when a writer raises it", async () => {
    await h.pushGraph(".workflow/diamond.yaml", BUDGETED);
    expect(h.gh.dispatches.map((d) => d.inputs.task)).toEqual(["a"]);
    await runJob(h, h.gh.dispatches[0]!, { costMicros: 250_000 });
    // a spent the whole budget: b and c wait, and the status says what to do.
    expect(h.gh.dispatches).toHaveLength(1);
    expect(statusBody()).toContain(
      "**Waiting for you**: budget spent: $0.25 of $0.25 for the run; 3 tasks to do wait for it.",
    );
    expect(statusBody()).toContain("Spent $0.25 of $0.25.");
    expect(h.gh.state("diamond/1").outcome).toBeNull();

    h.gh.permissions.set("mallory", "read");
    await comment("/agentrelay budget +1", "mallory", 499);
    expect(h.gh.dispatches).toHaveLength(1);

    h.gh.permissions.set("alice", "write");
    await comment("/agentrelay budget +1", "alice");
    await comment("/agentrelay budget +1", "alice"); // GitHub delivers it again
    expect(h.gh.dispatches.map((d) => d.inputs.task)).toEqual(["a", "b", "c"]);
    const state = h.gh.state("diamond/1") as unknown as RunState;
    expect(state.budget!.run.raisedMicros).toBe(1_000_000);
    expect(
      h.gh.comments.filter((c) => c.body.includes("raised the budget of the run by $1.00")),
    ).toHaveLength(1);
    // The two new attempts share what is left.
    expect(state.tasks.b!.attempts[0]!.capMicros).toBe(500_000);
    expect(state.tasks.c!.attempts[0]!.capMicros).toBe(500_000);
    for (const d of h.gh.dispatches.slice(1)) await runJob(h, d, { costMicros: 200_000 });
    await runJob(h, h.gh.dispatches[3]!, { costMicros: 200_000 });
    expect(h.gh.state("diamond/1").outcome).toBe("succeeded");
    expect(statusBody()).toContain("Spent $0.85 of $1.25.");
    // Each task's check run shows its spend against its cap and the run's budget.
    const check = h.gh.checkRuns.find((c) => c.external_id === "diamond/1/b")!;
    expect(check.output!.summary).toContain("Cost $0.20 of its cap $0.50 (task total $0.20; run: Spent $");
  });

  it("takes plain decimal amounts within bounds only, from a command and from a job's report", async () => {
    await h.pushGraph(".workflow/diamond.yaml", BUDGETED);
    h.gh.permissions.set("alice", "write");
    const before = JSON.stringify(h.gh.state("diamond/1"));
    let id = 600;
    for (const amount of ["+1e303", `+1${"0".repeat(303)}`, "+0x10", "+Infinity", "+-5", "+1000001"]) {
      await comment(`/agentrelay budget ${amount}`, "alice", id++);
      expect(h.gh.comments.at(-1)!.body).toContain(
        "where USD is a plain decimal number of US dollars greater than 0 and at most 1000000",
      );
    }
    expect(JSON.stringify(h.gh.state("diamond/1"))).toBe(before);
    // A job that reports an absurd cost is refused, and nothing of its report is applied.
    const { report } = await runJob(h, h.gh.dispatches[0]!, { costMicros: 1e303 });
    expect(report).toMatchObject({
      status: 400,
      body: {
        error:
          "invalid request: result.costMicros: a cost must be a whole number of micro-dollars from 0 to 1000000000000",
      },
    });
    const state = h.gh.state("diamond/1") as unknown as RunState;
    expect(state.tasks.a!.status).toBe("running");
    expect(state.budget!.run).toMatchObject({ spentMicros: 0, raisedMicros: 0 });
    expect(statusBody()).not.toMatch(/Infinity|NaN/);
  });

  it("an attempt stopped by its cap when the budget is then spent waits instead of failing", async () => {
    await h.pushGraph(".workflow/diamond.yaml", BUDGETED);
    await runJob(h, h.gh.dispatches[0]!, {
      outcome: "failed",
      reason: "stopped at its budget of $0.25",
      costMicros: 250_000,
      overBudget: true,
    });
    const a = (h.gh.state("diamond/1") as unknown as RunState).tasks.a!;
    expect(a.status).toBe("pending");
    expect(a.reason).toBe("stopped at its budget of $0.25");
    expect(statusBody()).toContain("budget spent: $0.25 of $0.25 for the run");
    expect(statusBody()).toContain("run `diamond/1`: waiting for budget (4 to do)");
    // Its check run is no verdict on the work: neutral, and it says the attempt was given back.
    const check = h.gh.checkRuns.find((c) => c.external_id === "diamond/1/a")!;
    expect(check.conclusion).toBe("neutral");
    expect(check.output!.title).toBe("a: attempt 1 stopped by the budget");
    expect(check.output!.summary).toContain(
      "It was stopped by its share of the run's budget, not by its own limit: it does not count against the task's attempts, and the task waits for budget or runs again.",
    );
  });
});

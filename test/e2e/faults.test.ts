/**
 * Faults, each with the whole diamond still completing, every attempt dispatched once and no task
 * lost: duplicated and reordered webhooks, a dropped webhook repaired by the reconciler, 5xx and
 * rate-limit answers on a fifth of calls, the app killed between a merge and the next dispatch,
 * and two replicas serving the same deliveries. And a conflict between two workstreams resolved by
 * one resolution job while deliveries are duplicated, reordered and served by two replicas.
 */
import { afterEach, describe, expect, it } from "vitest";
import { DIAMOND, OVERLAP } from "../../harness/graphs.ts";
import { e2eAgent } from "../../harness/e2e-agent.ts";
import { type Standin, type StandinOptions, startStandin } from "../../harness/standin.ts";

let standin: Standin | undefined;
afterEach(async () => {
  await standin?.close();
  standin = undefined;
});

async function runDiamond(options: Omit<StandinOptions, "script">, graph = DIAMOND): Promise<Standin> {
  // The faults are the app's and GitHub's: the Action's jobs run the tests' stand-in for Claude Code.
  standin = await startStandin({ script: e2eAgent(), agent: "stand-in", ...options });
  await standin.push({ ".workflow/diamond.yaml": graph });
  await standin.idle();
  return standin;
}

/** The run finished, every task's work is on main, and each attempt was dispatched exactly once. */
function expectComplete(s: Standin, attempts = ["a/1", "b/1", "c/1", "d/1"]): void {
  expect(s.gh.state("diamond/1").outcome).toBe("succeeded");
  for (const task of ["a", "b", "c", "d"])
    expect(s.git("show", `main:notes/${task}.md`)).toContain(`task ${task}`);
  const keys = s.gh.dispatches.map((d) => `${d.inputs.task}/${d.inputs.attempt}`);
  expect(keys.sort()).toEqual(attempts);
}

describe("end to end under faults", () => {
  it("duplicated and reordered webhooks", async () => {
    let n = 0;
    // The app's side of the fault: jobs scripted as the Action reports (its own retries are the 5xx case's).
    const s = await runDiamond({ jobs: "scripted", route: () => "duplicate", delay: () => (n++ * 37) % 150 });
    expectComplete(s);
    expect(s.deliveries.length).toBeGreaterThan(10);
  });

  it("a dropped webhook is repaired by the reconciler", async () => {
    // The runner of a's first attempt dies once it has taken its token (the run ends failed, without
    // a report), and the workflow_run event that says so never arrives. The repair is the app's:
    // scripted jobs, which take their token and report as the Action does.
    standin = await startStandin({
      script: e2eAgent(),
      jobs: "scripted",
      hold: async ({ task, attempt }, runId) => {
        if (task !== "a" || attempt !== "1") return;
        Object.assign(standin!.gh.workflowRuns.get(runId)!, { status: "completed", conclusion: "failure" });
        throw new Error("the runner of a/1 died (on purpose)");
      },
      route: (d) => (d.name === "workflow_run" ? "drop" : "deliver"),
    });
    await standin.push({ ".workflow/diamond.yaml": `max_task_attempts: 2\n${DIAMOND}` });
    await standin.idle();
    expect(
      (standin.gh.state("diamond/1").tasks.a as { attempts?: { job?: string }[] }).attempts?.[0]?.job,
    ).toBeTruthy(); // the job took its token: the app knows it started
    expect(standin.gh.state("diamond/1").tasks.a!.status).toBe("running"); // nobody told the app
    await standin.reconcile();
    await standin.idle();
    expectComplete(standin, ["a/1", "a/2", "b/1", "c/1", "d/1"]);
  });

  it("5xx and secondary-rate-limit answers on a fifth of the calls", async () => {
    let calls = 0;
    const s = await runDiamond({
      fault: () => {
        calls++;
        if (calls % 5 !== 0) return null;
        return calls % 10 === 0
          ? [
              429,
              {
                message:
                  "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
              },
            ]
          : [502, { message: "Server Error" }];
      },
    });
    expectComplete(s);
    expect(s.gh.calls.filter((c) => c.status >= 500 || c.status === 429).length).toBeGreaterThan(10);
  });

  it("the app killed and restarted between a merge and the next dispatch", async () => {
    standin = await startStandin({ script: e2eAgent(), agent: "stand-in" });
    const deliver = standin.gh.onMerge;
    let killed = false;
    standin.gh.onMerge = (pull) => {
      deliver(pull);
      if (!killed && pull.head === "agentrelay/diamond/a") {
        killed = true;
        void standin!.restartReplica(0); // the replica's next call fails: it is gone
      }
    };
    await standin.push({ ".workflow/diamond.yaml": DIAMOND });
    await standin.idle();
    expect(killed).toBe(true);
    expectComplete(standin);
    // a's report died with the replica that was handling it; the job sent it again to the new one.
    const reports = standin.jobRequests.filter((r) => r.path === "/agentrelay/report");
    expect(reports.map((r) => r.status)).toContain(502);
    expect(reports.filter((r) => r.status === 200)).toHaveLength(4);
  });

  it("two app replicas serving the same deliveries", async () => {
    const s = await runDiamond({ jobs: "scripted", replicas: 2, broadcast: true });
    expectComplete(s);
    expect(s.gh.issues).toHaveLength(1);
    expect(s.gh.pulls).toHaveLength(8);
  });

  it("one resolution for a conflict, with duplicated and reordered deliveries to two replicas", async () => {
    let n = 0;
    standin = await startStandin({
      script: e2eAgent(undefined, () => "notes/shared.md"),
      agent: "stand-in",
      replicas: 2,
      broadcast: true,
      route: () => "duplicate",
      delay: () => (n++ * 37) % 150,
    });
    await standin.push({ ".workflow/overlap.yaml": OVERLAP });
    await standin.idle();
    expect(standin.gh.state("overlap/1").outcome).toBe("succeeded");
    const keys = standin.gh.dispatches.map((d) => `${d.inputs.task}/${d.inputs.attempt}`).sort();
    expect(keys).toHaveLength(3);
    expect(keys.filter((k) => k.startsWith("resolve-integration@"))).toHaveLength(1);
    expect(standin.git("show", "main:notes/shared.md").split("\n").sort()).toEqual([
      "task a, attempt 1",
      "task b, attempt 1",
    ]);
  });
});

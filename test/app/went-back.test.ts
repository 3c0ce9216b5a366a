/**
 * A state branch forced back to an older version (security case 9): the run notices, from what GitHub
 * merged, that its state went back; it takes those merges as done, dispatches no task whose PR merged
 * already, merges nothing twice, and says so once on its issue.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Harness, issueComment, runJob, startApp } from "../../harness/app.ts";
import { DIAMOND } from "../../harness/graphs.ts";

let h: Harness;
beforeEach(async () => {
  h = await startApp();
  h.gh.permissions.set("alice", "write");
});
afterEach(() => h.close());

const BRANCH = "agentrelay-state/diamond";
const dispatched = () => h.gh.dispatches.map((d) => `${d.inputs.task}/${d.inputs.attempt}`);
const merges = () => h.gh.pulls.filter((p) => p.merged).map((p) => p.head.replace("agentrelay/diamond/", ""));
const tasks = () => h.gh.state("diamond/1").tasks;
let commentId = 700;
const status = () => issueComment(h, "/agentrelay status", "alice", { id: commentId++ });

describe("a state branch forced back", () => {
  it("takes what GitHub merged since as merged: no task is dispatched or merged twice", async () => {
    await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
    // The version where a runs; then a, and b after it, are merged.
    const old = h.gh.branches.get(BRANCH)!;
    await runJob(h, h.gh.dispatches[0]!);
    const b = h.gh.dispatches.find((d) => d.inputs.task === "b")!;
    await runJob(h, b);
    expect(tasks().a!.status).toBe("merged");
    expect(tasks().b!.status).toBe("merged");
    expect(dispatched().sort()).toEqual(["a/1", "b/1", "c/1"]);
    h.gh.branches.set(BRANCH, old);
    expect(tasks().a!.status).toBe("running");
    // The reconciler (here through /agentrelay status) checks the state against GitHub's merges.
    expect(await status()).toBe(200);
    expect(tasks().a!.status).toBe("merged");
    expect(tasks().b!.status).toBe("merged");
    // b was pending again in the old version: it was not dispatched again (its PR merged); c was
    // running in no version GitHub knows of, so it runs again.
    expect(dispatched().filter((d) => d.startsWith("a/") || d.startsWith("b/"))).toEqual(["a/1", "b/1"]);
    expect(
      merges()
        .filter((m) => m === "a" || m === "b")
        .sort(),
    ).toEqual(["a", "b"]);
    const said = h.gh.comments.filter((c) => c.body.includes("had gone back"));
    expect(said.map((c) => c.issue)).toEqual([h.gh.issues[0]!.number, h.gh.issues[0]!.number]);
    expect(said[0]!.body).toContain("`a` (#");
    expect(said[1]!.body).toContain("`b` (#");
    // The run goes to its end, with every task merged once.
    let next = h.gh.dispatches.length - 1;
    while (tasks().d!.status !== "merged") await runJob(h, h.gh.dispatches[next++]!);
    expect(h.gh.state("diamond/1").outcome).toBe("succeeded");
    expect(merges().sort()).toEqual(
      [
        "a",
        "b",
        "c",
        "d",
        "ws_a/integration",
        "ws_b/integration",
        "ws_c/integration",
        "ws_d/integration",
      ].sort(),
    );
  });

  it("takes a task the old version has failed, merged since by a retry, as merged", async () => {
    await h.pushGraph(".workflow/diamond.yaml", `max_task_attempts: 1\n${DIAMOND}`);
    await runJob(h, h.gh.dispatches[0]!);
    const b = h.gh.dispatches.find((d) => d.inputs.task === "b")!;
    await runJob(h, b, { outcome: "failed", reason: "broken" });
    expect(tasks().b!.status).toBe("failed");
    const old = h.gh.branches.get(BRANCH)!;
    expect(await issueComment(h, "/agentrelay retry b", "alice", { id: 690 })).toBe(200);
    await runJob(h, h.gh.dispatches.at(-1)!);
    expect(tasks().b!.status).toBe("merged");
    h.gh.branches.set(BRANCH, old);
    expect(await status()).toBe(200);
    expect(tasks().b!.status).toBe("merged");
    expect(dispatched().filter((d) => d.startsWith("b/"))).toEqual(["b/1", "b/2"]);
    expect(merges().filter((m) => m === "b")).toEqual(["b"]);
  });
});

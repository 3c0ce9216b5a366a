/**
 * What the status comment says of integration PRs being verified and repaired before they land: the
 * job at work, the PRs waiting their turn (one landing into a branch at a time), and a PR left to a
 * person, with why, the commands to see it and the end of what fails.
 */
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/engine.ts";
import type { EngineEvent } from "../../src/engine/types.ts";
import { statusComment, waitingFor } from "../../src/github/status-comment.ts";
import { graphOf } from "../support/graphs.ts";

const links = { trackingIssue: 7, job: (id: string) => `https://github.com/o/r/actions/runs/${id}` };
const url = (n: number) => `https://github.com/o/r/pull/${n}`;

/** Two gated workstreams into main, their tasks merged, their integration PRs (#1 left, #2 right) open. */
function bothOpen() {
  const engine = createEngine(
    graphOf(
      [
        { id: "a", ws: "left", extra: "completion_gate: make test" },
        { id: "b", ws: "right", extra: "completion_gate: make test" },
        { id: "c", ws: "after", deps: ["b"] },
      ],
      [{ id: "left", autoMerge: true }, { id: "right", autoMerge: true }, { id: "after" }],
      "max_concurrency: 2\nmax_repair_attempts: 1",
    ),
  );
  const { state } = engine.start(0);
  for (const [task, ws] of [
    ["a", "left"],
    ["b", "right"],
  ] as const) {
    Object.assign(state.tasks[task]!, { status: "merged" });
    Object.assign(state.workstreams[ws]!, { status: "merge_ready", unfinished: 0, integration: "opening" });
  }
  const apply = (event: EngineEvent) => engine.apply(state, event);
  apply({ type: "integration_pr_opened", workstream: "left", pr: { number: 1, url: url(1) }, at: 1 });
  apply({ type: "integration_pr_opened", workstream: "right", pr: { number: 2, url: url(2) }, at: 2 });
  return { plan: engine.plan, state, apply };
}

const landing = (
  kind: "verify" | "repair",
  ok: boolean,
  at: number,
): Extract<EngineEvent, { type: "resolution_finished" }> => ({
  type: "resolution_finished",
  workstream: "left",
  kind,
  n: 1,
  ok,
  ...(ok
    ? { base: "b".repeat(40), head: "a".repeat(40) }
    : { output: "FAIL report.test.js - math.total is not a function" }),
  at,
});

describe("verifications and repairs on the status comment", () => {
  it("names the verification at work, with its job, and the PR that waits its turn", () => {
    const { plan, state, apply } = bothOpen();
    apply({ type: "resolution_dispatched", workstream: "left", kind: "verify", n: 1, job: "77", at: 3 });
    expect(waitingFor(plan, state, links)).toEqual([
      "- Verifying before it lands (its gates on the branch with its target merged in): [#1](https://github.com/o/r/pull/1) (`left`): [verification 1](https://github.com/o/r/actions/runs/77).",
      "- Waiting their turn to be verified (one landing into a branch at a time): [#2](https://github.com/o/r/pull/2).",
      "- 1 task to do waits its turn behind work that moves on its own.",
    ]);
  });

  it("names the repair at work, and a verified PR as one GitHub merges", () => {
    const { plan, state, apply } = bothOpen();
    apply(landing("verify", false, 3));
    expect(waitingFor(plan, state, links)[0]).toBe(
      "- Repairing what fails when it meets its target (an agent, then the gates): [#1](https://github.com/o/r/pull/1) (`left`): repair 1.",
    );
    apply(landing("repair", true, 4));
    expect(waitingFor(plan, state, links)).toContain(
      "- Waiting for GitHub: [#1](https://github.com/o/r/pull/1) merges itself once required checks pass.",
    );
  });

  it("leaves to a person what no repair fixed: why, the commands to see it, and what fails", () => {
    const { plan, state, apply } = bothOpen();
    apply(landing("verify", false, 3));
    apply({ ...landing("repair", false, 4), reason: "the gate failed on the merged result: make test" });
    const [line] = waitingFor(plan, state, links);
    expect(line!.split("\n")).toEqual([
      "- **Waiting for you**: [#1](https://github.com/o/r/pull/1) (`left` into `main`): not verified: its gates fail on the tree that would land (1 repair attempt did not fix it); to see it: `git fetch origin && git switch --detach origin/agentrelay/g/left/integration && git merge --no-edit origin/main && make test`. Fix it on its branch, or close it to fail the workstream.",
      "  What fails (end):",
      "  ```text",
      "  FAIL report.test.js - math.total is not a function",
      "  ```",
    ]);
    // The other PR's turn came: it is verified meanwhile.
    const comment = statusComment(plan, state, 0, links);
    expect(comment).toContain("### agentrelay run `g/1`: running, waiting for you (1 to do, 2 merged)");
    expect(comment).toContain(
      "- Verifying before it lands (its gates on the branch with its target merged in): [#2](https://github.com/o/r/pull/2) (`right`): verification 1.",
    );
  });
});

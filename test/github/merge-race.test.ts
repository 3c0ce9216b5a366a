/**
 * GitHub answers a merge 405 "Base branch was modified. Review and try the merge again." when another
 * merge lands on the base meanwhile: the app asks the merge again (a few times), and the task merges
 * in the same round instead of waiting for the reconciler.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Harness, runJob, startApp } from "../../harness/app.ts";
import { DIAMOND } from "../../harness/graphs.ts";

let h: Harness;
beforeEach(async () => {
  h = await startApp({ statusIntervalMs: 0 });
});
afterEach(() => h.close());

describe("a merge raced by another merge on its base", () => {
  it("is asked again and lands in the same round", async () => {
    await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
    h.gh.baseMoves = 2;
    await runJob(h, h.gh.dispatches[0]!);
    const merges = h.gh.calls.filter((c) => c.method === "PUT" && c.path.endsWith("/merge"));
    expect(merges.map((c) => c.status).slice(0, 3)).toEqual([405, 405, 200]);
    expect(h.gh.state("diamond/1").tasks.a!.status).toBe("merged");
    expect(h.gh.dispatches.map((d) => d.inputs.task)).toEqual(["a", "b", "c"]);
  });
});

/**
 * bench:github-limits' two-repository rows: the chains' graph with its workstreams in octo/api and
 * octo/web, run through the real app on the fake of several repositories with GitHub's limits on.
 */
import { describe, expect, it } from "vitest";
import { acrossRepositories, limitedRun } from "../../bench/github-limits.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { chainsGraph } from "../../harness/graphs.ts";

describe("bench:github-limits across two repositories", () => {
  it("places the chains in two repositories by turns, each client chain waiting for its API chain", () => {
    const graph = parseGraph("g.yaml", acrossRepositories(chainsGraph(6, 4), true));
    expect(graph.repositories?.map((r) => `${r.name}=${r.fullName}`)).toEqual([
      "api=octo/api",
      "web=octo/web",
    ]);
    expect(graph.workstreams.map((w) => `${w.id}:${w.repository}`)).toEqual([
      "ws_0:api",
      "ws_1:web",
      "ws_2:api",
      "ws_3:web",
    ]);
    expect(graph.tasks.map((t) => `${t.id}<${t.dependencies.join(",")}`)).toEqual([
      "t0<",
      "t1<t0",
      "t2<",
      "t3<t2",
      "t4<t0",
      "t5<t1",
    ]);
  });

  it("runs to its end with nothing lost, and counts writes in each repository", async () => {
    const row = await limitedRun("chains", acrossRepositories(chainsGraph(8, 4), true), Infinity, {
      repositories: ["octo/api", "octo/web"],
    });
    expect(row.outcome).toBe("succeeded");
    expect(row.lost).toBe(0);
    expect(row.tasks).toBe(8);
    expect(row.repositories).toMatch(/^demo \d+\.\d\d · api \d+\.\d\d · web \d+\.\d\d$/);
  });
});

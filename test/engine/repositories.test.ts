import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/engine.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { landedElsewhere } from "../../src/protocol/landed.ts";
import { API_THEN_CLIENT, FAN_IN } from "../support/repositories.ts";

describe("the engine of a graph that spans repositories", () => {
  it("names the repository each effect acts in, and waits for the other repository's workstream to land", () => {
    const engine = createEngine(parseGraph("g.yaml", API_THEN_CLIENT));
    const { state, effects } = engine.start(0);
    expect(effects.filter((e) => e.type === "prepare_workstream")).toEqual([
      expect.objectContaining({ workstream: "server", repository: "api" }),
    ]);
    expect(engine.apply(state, { type: "workstream_prepared", workstream: "server", at: 1 })).toContainEqual(
      expect.objectContaining({ type: "dispatch", task: "add-endpoint", repository: "api" }),
    );
    const pr = { number: 1, url: "https://github.com/octo/api/pull/1" };
    engine.apply(state, { type: "job_started", task: "add-endpoint", attempt: 1, at: 2 });
    expect(
      engine.apply(state, {
        type: "job_succeeded",
        task: "add-endpoint",
        attempt: 1,
        at: 3,
        summary: "GET /v2/items",
      }),
    ).toContainEqual(
      expect.objectContaining({ type: "open_task_pr", task: "add-endpoint", repository: "api" }),
    );
    engine.apply(state, { type: "task_pr_opened", task: "add-endpoint", pr, at: 3 });
    expect(engine.apply(state, { type: "task_pr_merged", task: "add-endpoint", pr, at: 4 })).toContainEqual(
      expect.objectContaining({ type: "open_integration_pr", workstream: "server", repository: "api" }),
    );
    const integration = { number: 2, url: "https://github.com/octo/api/pull/2" };
    engine.apply(state, { type: "integration_pr_opened", workstream: "server", pr: integration, at: 5 });
    // Still waiting: the client's task starts only once the server's workstream has landed in octo/api.
    expect(state.tasks["use-endpoint"]!.status).toBe("pending");
    const landed = engine.apply(state, {
      type: "integration_pr_merged",
      workstream: "server",
      at: 6,
      commit: "0123abc",
    });
    expect(landed).toContainEqual(
      expect.objectContaining({ type: "prepare_workstream", workstream: "client", repository: "web" }),
    );
    expect(engine.apply(state, { type: "workstream_prepared", workstream: "client", at: 7 })).toContainEqual(
      expect.objectContaining({ type: "dispatch", task: "use-endpoint", repository: "web" }),
    );
    expect(state.workstreams.server!.landedCommit).toBe("0123abc");
  });

  it("names no repository in the effects of a graph in one", () => {
    const text = API_THEN_CLIENT.replace(/^repositories:\n( {2}.*\n)+/m, "").replace(
      / {4}repository: \w+\n/g,
      "",
    );
    const { effects } = createEngine(parseGraph("g.yaml", text)).start(0);
    expect(effects.length).toBeGreaterThan(0);
    expect(effects.some((e) => "repository" in e)).toBe(false);
  });

  it("fans in: a task in a third repository starts once both workstreams it depends on landed, told of both", () => {
    const graph = parseGraph("g.yaml", FAN_IN);
    const engine = createEngine(graph);
    const { state, effects } = engine.start(0);
    // The two upstream workstreams start at once, each in its repository.
    expect(effects.filter((e) => e.type === "prepare_workstream").map((e) => e.repository)).toEqual(
      expect.arrayContaining(["api", "worker"]),
    );
    const land = (task: string, ws: string, n: number) => {
      engine.apply(state, { type: "workstream_prepared", workstream: ws, at: n });
      engine.apply(state, { type: "job_started", task, attempt: 1, at: n });
      engine.apply(state, { type: "job_succeeded", task, attempt: 1, at: n, summary: `did ${task}` });
      const pr = { number: n, url: `https://github.com/x/${ws}/pull/${n}` };
      engine.apply(state, { type: "task_pr_opened", task, pr, at: n });
      engine.apply(state, { type: "task_pr_merged", task, pr, at: n });
      engine.apply(state, {
        type: "integration_pr_opened",
        workstream: ws,
        pr: { ...pr, number: n + 1 },
        at: n,
      });
      return engine.apply(state, { type: "integration_pr_merged", workstream: ws, at: n, commit: `c${n}` });
    };
    expect(land("add-endpoint", "server", 10)).not.toContainEqual(
      expect.objectContaining({ type: "prepare_workstream", workstream: "client" }),
    );
    expect(land("add-job", "jobs", 20)).toContainEqual(
      expect.objectContaining({ type: "prepare_workstream", workstream: "client", repository: "web" }),
    );
    const told = landedElsewhere(state, engine.plan.tasks.get("use-both")!, engine.plan);
    expect(told.map((l) => [l.workstream, l.repository.fullName, l.commit, l.tasks[0]!.summary])).toEqual([
      ["jobs", "octo/worker", "c20", "did add-job"],
      ["server", "octo/api", "c10", "did add-endpoint"],
    ]);
  });
});

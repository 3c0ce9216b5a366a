import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/engine.ts";
import { simulatedResponse } from "../../src/engine/simulate.ts";
import { drive } from "../../src/engine/driver.ts";
import { MemoryStateStore, type StateStore, startRun } from "../../src/engine/store.ts";
import type { EngineEffect, EngineEvent } from "../../src/engine/types.ts";
import { git } from "../../src/attempt/git.ts";
import { GitRefStateStore, stateRef } from "../../src/local/git-store.ts";
import { graphOf } from "../support/graphs.ts";
import { tempRepo } from "../support/git.ts";
import { RecordingHost } from "../support/host.ts";

const graph = graphOf(
  [
    { id: "a", ws: "x" },
    { id: "b", deps: ["a"], ws: "y" },
    { id: "c", deps: ["a"], ws: "z" },
    { id: "d", deps: ["b", "c"], ws: "w" },
  ],
  [
    { id: "x", autoMerge: true },
    { id: "y", autoMerge: true },
    { id: "z", autoMerge: true },
    { id: "w", autoMerge: true },
  ],
  "max_concurrency: 2\nmax_task_attempts: 2",
);

const stores: [string, () => Promise<StateStore>][] = [
  ["memory", async () => new MemoryStateStore()],
  ["git ref", async () => new GitRefStateStore(await tempRepo())],
];

describe.each(stores)("%s state store", (_, makeStore) => {
  it("creates once, then writes only on top of the version read", async () => {
    const store = await makeStore();
    const engine = createEngine(graph);
    const first = await startRun(store, engine, 0);
    expect(first.created).toBe(true);
    expect((await startRun(store, engine, 0)).created).toBe(false);
    const loaded = (await store.load("g/1"))!;
    expect(loaded.version).toBe(first.version);
    expect(loaded.state).toEqual(first.state);
    const next = { ...loaded.state, seq: loaded.state.seq + 1 };
    const v2 = await store.compareAndSwap("g/1", loaded.version, next);
    expect(v2).not.toBeNull();
    expect(await store.compareAndSwap("g/1", loaded.version, { ...next, seq: 99 })).toBeNull();
    expect((await store.load("g/1"))!.state.seq).toBe(next.seq);
  });

  it("lets exactly one of two concurrent writers from the same version win", async () => {
    const store = await makeStore();
    const { version, state } = await startRun(store, createEngine(graph), 0);
    const results = await Promise.all(
      [1, 2, 3].map((n) => store.compareAndSwap("g/1", version, { ...state, seq: 100 + n })),
    );
    expect(results.filter((r) => r !== null)).toHaveLength(1);
  });
});

describe("the git ref store", () => {
  it("keeps the run's history inspectable with git", async () => {
    const repo = await tempRepo();
    const store = new GitRefStateStore(repo);
    const engine = createEngine(graph);
    await startRun(store, engine, 0);
    await drive(new RecordingHost(store, engine), "g/1", [
      { type: "workstream_prepared", workstream: "x", at: 1 },
    ]);
    const log = await git(repo, ["log", "--format=%s", stateRef("g/1")]);
    expect(log.split("\n")).toEqual(["g/1: state 2", "g/1: state 1"]);
    // The index and one bucket of task records, each readable with git show.
    const files = await git(repo, ["ls-tree", "-r", "--name-only", stateRef("g/1")]);
    expect(files.split("\n")).toEqual(["run.json", "tasks/000.json"]);
    const index = JSON.parse(await git(repo, ["show", `${stateRef("g/1")}:run.json`]));
    expect(index.workstreams.x.status).toBe("active");
    const tasks = JSON.parse(await git(repo, ["show", `${stateRef("g/1")}:tasks/000.json`]));
    expect(tasks.tasks.a.status).toBe("running");
  });

  it("resumes a run stored in the earlier one-document format, and converts it on the next write", async () => {
    const repo = await tempRepo();
    const engine = createEngine(graph);
    const { state } = engine.start(0);
    // What the earlier store wrote: one state.json per commit.
    const blob = await git(repo, ["hash-object", "-w", "--stdin"], JSON.stringify(state));
    const tree = await git(repo, ["mktree"], `100644 blob ${blob}\tstate.json\n`);
    const commit = await git(repo, ["commit-tree", tree, "-m", "g/1: state 1"]);
    await git(repo, ["update-ref", stateRef("g/1"), commit]);

    const store = new GitRefStateStore(repo);
    expect((await store.load("g/1"))!.state).toEqual(state);
    await drive(new RecordingHost(store, engine), "g/1", [
      { type: "workstream_prepared", workstream: "x", at: 1 },
    ]);
    const files = await git(repo, ["ls-tree", "-r", "--name-only", stateRef("g/1")]);
    expect(files.split("\n")).toEqual(["run.json", "tasks/000.json"]);
    const resumed = (await new GitRefStateStore(repo).load("g/1"))!.state;
    expect(resumed.tasks.a!.status).toBe("running");
    expect(resumed.tasks.d).toEqual(state.tasks.d);
  });

  it("writes only the buckets whose tasks changed", async () => {
    const repo = await tempRepo();
    const wide = graphOf(
      Array.from({ length: 200 }, (_, i) => ({ id: `t${i}`, ws: "x" })),
      [{ id: "x", autoMerge: true }],
    );
    const engine = createEngine(wide);
    const store = new GitRefStateStore(repo);
    await startRun(store, engine, 0);
    await drive(new RecordingHost(store, engine), "g/1", [
      { type: "workstream_prepared", workstream: "x", at: 1 },
    ]);
    const changed = await git(repo, ["diff", "--name-only", `${stateRef("g/1")}~1`, stateRef("g/1")]);
    // 200 tasks lie in 7 buckets; starting the first task changes the index and its bucket.
    expect(changed.split("\n")).toEqual(["run.json", expect.stringMatching(/^tasks\/00\d\.json$/)]);
  });
});

/**
 * Two app replicas share one git-ref store. Every fact is delivered to both (as GitHub would deliver
 * a webhook to two replicas behind a load balancer), both drive it at the same time, and each carries
 * out what its own rounds ask: repeatable effects (their answers join the write) and, when its write
 * lands, the once-only ones.
 */
describe("two drivers sharing a git ref store", () => {
  it("dispatch each attempt exactly once", async () => {
    const store = new GitRefStateStore(await tempRepo());
    let clock = 0;
    const world = { failures: new Map([["b", 1]]), concerns: new Set<string>() };
    const respond = (effect: EngineEffect) => {
      const number = ++clock;
      return simulatedResponse(effect, world, number, () => ({ number, url: `u/${number}` }));
    };
    const pending: EngineEvent[] = [];
    const replicas = [0, 1].map(
      () =>
        new RecordingHost(store, createEngine(graph), respond, (effect) => {
          pending.push(...respond(effect));
          return [];
        }),
    );
    const engine = replicas[0]!.engine;
    await startRun(store, engine, 0);
    await Promise.all(replicas.map((host) => drive(host, "g/1", [], { pending: true })));
    let rounds = 0;
    while (pending.length > 0 && rounds++ < 200) {
      const event = pending.shift()!;
      await Promise.all(replicas.map((host) => drive(host, "g/1", [event])));
    }

    const once = replicas.flatMap((r) => r.once);
    const dispatches = once.filter((e) => e.type === "dispatch").map((e) => e.key);
    expect(dispatches.sort()).toEqual(["g/1/a/1", "g/1/b/1", "g/1/b/2", "g/1/c/1", "g/1/d/1"]);
    // No once-only effect ran twice (status updates aside, which are coalesced by key anyway).
    const keys = once.filter((e) => e.type !== "update_status").map((e) => e.key);
    expect(new Set(keys).size).toBe(keys.length);
    const final = (await store.load("g/1"))!.state;
    expect(final.outcome).toBe("succeeded");
    expect(Object.values(final.workstreams).map((w) => w.status)).toEqual([
      "merged",
      "merged",
      "merged",
      "merged",
    ]);
  });
});

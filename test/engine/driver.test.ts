/**
 * The one driver every host uses: exactly-once is implemented here, so it is tested here, with a
 * host that records what it is asked to do and a store that can lose a race on demand.
 */
import { describe, expect, it } from "vitest";
import { drive, settle } from "../../src/engine/driver.ts";
import { createEngine } from "../../src/engine/engine.ts";
import { MemoryStateStore, type StateStore, startRun, type Versioned } from "../../src/engine/store.ts";
import type { EngineEffect, EngineEvent, RunState } from "../../src/engine/types.ts";
import { graphOf } from "../support/graphs.ts";
import { RecordingHost } from "../support/host.ts";

const graph = graphOf([{ id: "a" }, { id: "b", deps: ["a"] }], undefined, "max_task_attempts: 2");
const prepared: EngineEvent = { type: "workstream_prepared", workstream: "default", at: 1 };

/** A store in which another writer slips in before the next `n` writes (each then loses its race). */
class RacingStore implements StateStore {
  races = 0;
  loads: { fresh: boolean }[] = [];
  constructor(
    readonly inner: MemoryStateStore,
    private pendingRaces: number,
  ) {}
  load(run: string, options: { fresh?: boolean } = {}): Promise<Versioned | null> {
    this.loads.push({ fresh: options.fresh === true });
    return this.inner.load(run);
  }
  async compareAndSwap(run: string, expected: string | null, next: RunState): Promise<string | null> {
    if (this.pendingRaces > 0 && expected !== null) {
      this.pendingRaces--;
      this.races++;
      const current = (await this.inner.load(run))!;
      await this.inner.compareAndSwap(run, current.version, current.state); // same state, new version
    }
    return this.inner.compareAndSwap(run, expected, next);
  }
}

async function started(store: StateStore) {
  const engine = createEngine(graph);
  await startRun(store, engine, 0);
  return engine;
}

const types = (effects: EngineEffect[]) => effects.map((e) => `${e.type}:${"task" in e ? e.task : ""}`);

describe("the driver", () => {
  it("carries out once-only effects only after its write lands, and only once when it loses a race", async () => {
    const store = new RacingStore(new MemoryStateStore(), 2);
    const host = new RecordingHost(store, await started(store.inner));
    const driven = await drive(host, "g/1", [prepared]);
    expect(store.races).toBe(2);
    expect(driven).toMatchObject({ changed: true });
    expect(types(host.once)).toEqual(["dispatch:a", "update_status:"]);
    // After a lost race the driver reads afresh.
    expect(store.loads.map((l) => l.fresh)).toEqual([false, true, true]);
    expect((await store.inner.load("g/1"))!.state.tasks.a!.status).toBe("running");
  });

  it("reuses the facts a repeatable effect produced in a lost round instead of repeating it", async () => {
    const store = new RacingStore(new MemoryStateStore(), 1);
    const engine = await started(store.inner);
    const pr = { number: 4, url: "u/4" };
    const host = new RecordingHost(store, engine, (effect) =>
      effect.type === "open_task_pr" ? [{ type: "task_pr_opened", task: "a", pr, at: 3 }] : [],
    );
    await drive(new RecordingHost(store.inner, engine), "g/1", [prepared]);
    await drive(host, "g/1", [{ type: "job_succeeded", task: "a", attempt: 1, at: 2 }]);
    expect(store.races).toBe(1);
    // The PR was opened once, and its fact landed with the job's success in one write.
    expect(types(host.executed.filter((e) => e.type === "open_task_pr"))).toEqual(["open_task_pr:a"]);
    const state = (await store.inner.load("g/1"))!.state;
    expect(state.tasks.a).toMatchObject({ status: "pr_open", pr });
  });

  it("gives each once-only effect to one of two drivers racing on the same fact", async () => {
    const store = new MemoryStateStore();
    const engine = await started(store);
    const hosts = [new RecordingHost(store, engine), new RecordingHost(store, createEngine(graph))];
    const results = await Promise.all(hosts.map((h) => drive(h, "g/1", [prepared])));
    expect(results.map((r) => r!.changed).sort()).toEqual([false, true]);
    expect(hosts.flatMap((h) => h.once).filter((e) => e.type === "dispatch")).toHaveLength(1);
  });

  it("writes nothing for a duplicated fact, but still answers (a refused command's reply)", async () => {
    const store = new MemoryStateStore();
    const host = new RecordingHost(store, await started(store));
    await drive(host, "g/1", [prepared]);
    const before = await store.load("g/1");
    host.once.length = 0;
    const again = await drive(host, "g/1", [
      prepared,
      { type: "command", command: "retry", task: "a", by: "octocat", at: 5 },
    ]);
    expect(again).toMatchObject({ changed: false, version: before!.version });
    expect(host.once).toEqual([expect.objectContaining({ type: "reply", ok: false })]);
    expect((await store.load("g/1"))!.version).toBe(before!.version);
  });

  it("checks a remembered state afresh before concluding that nothing is to be done", async () => {
    const store = new MemoryStateStore();
    const engine = await started(store);
    await drive(new RecordingHost(store, engine), "g/1", [prepared]);
    const stale = (await store.load("g/1"))!;
    await drive(new RecordingHost(store, engine), "g/1", [
      { type: "job_succeeded", task: "a", attempt: 1, at: 2 },
    ]);
    // A host whose memory is behind: the success is not in its remembered state.
    const host = new RecordingHost(store, engine);
    let first = true;
    host.load = async (run, options) => {
      if (first) {
        first = false;
        return { ...stale, state: structuredClone(stale.state), engine, cached: true };
      }
      return RecordingHost.prototype.load.call(host, run, options);
    };
    const driven = await drive(host, "g/1", [{ type: "job_started", task: "a", attempt: 1, at: 3 }]);
    // In the remembered state job_started changed something, so it wrote; the write met the newer
    // version, lost, and the fresh read showed the attempt finished: nothing to do.
    expect(driven!.state.tasks.a!.status).toBe("pr_open");
    expect(host.once.filter((e) => e.type === "dispatch")).toEqual([]);
  });

  it("leaves an effect that failed owed, writes the rest, and repairs it with `pending`", async () => {
    const store = new MemoryStateStore();
    const engine = await started(store);
    const failing = new RecordingHost(store, engine, (effect) => {
      if (effect.type === "open_task_pr") throw new Error("GitHub answered 502");
      return [];
    });
    await drive(failing, "g/1", [prepared, { type: "job_succeeded", task: "a", attempt: 1, at: 2 }]);
    expect(failing.logged).toEqual([
      "g/1/a/pr (open_task_pr) failed, left to the reconciler: GitHub answered 502",
    ]);
    expect((await store.load("g/1"))!.state.tasks.a!.status).toBe("pr_open");
    const pr = { number: 9, url: "u/9" };
    const repair = new RecordingHost(store, engine, (effect) =>
      effect.type === "open_task_pr" ? [{ type: "task_pr_opened", task: "a", pr, at: 4 }] : [],
    );
    await drive(repair, "g/1", [], { pending: true });
    expect((await store.load("g/1"))!.state.tasks.a!.pr).toEqual(pr);
  });

  it("drives the facts once-only effects produce (a dispatch GitHub refused)", async () => {
    const store = new MemoryStateStore();
    const host = new RecordingHost(store, await started(store), undefined, (effect) =>
      effect.type === "dispatch"
        ? [{ type: "job_failed", task: effect.task, attempt: effect.attempt, reason: "no workflow", at: 2 }]
        : [],
    );
    await drive(host, "g/1", [prepared]);
    const state = (await store.load("g/1"))!.state;
    expect(state.tasks.a).toMatchObject({ status: "failed", attempt: 2, reason: "no workflow" });
    expect(host.once.filter((e) => e.type === "dispatch").map((e) => e.key)).toEqual(["g/1/a/1", "g/1/a/2"]);
  });

  it("settles a state decided outside a round once: a second settle of the same start changes nothing", async () => {
    const store = new MemoryStateStore();
    const engine = createEngine(graph);
    const hosts = [new RecordingHost(store, engine), new RecordingHost(store, engine)];
    const versions = await Promise.all(hosts.map((h) => settle(h, "g/1", null, engine.start(0), engine)));
    expect(versions.filter((v) => v !== null)).toHaveLength(1);
    // The repeatable effect of the start (the integration branch) is carried out through a round.
    expect(
      hosts.flatMap((h) => h.executed).filter((e) => e.type === "prepare_workstream").length,
    ).toBeGreaterThan(0);
  });
});

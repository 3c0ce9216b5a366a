import { Octokit } from "@octokit/rest";
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/engine.ts";
import { drive } from "../../src/engine/driver.ts";
import { startRun } from "../../src/engine/store.ts";
import { StateCache } from "../../src/github/state-cache.ts";
import { GitHubStateStore } from "../../src/github/state-store.ts";
import { FakeGitHub } from "../../harness/fake-github.ts";
import { graphOf } from "../support/graphs.ts";
import { RecordingHost } from "../support/host.ts";

/** GitHub answered by the fake GitHub (through nock): the state branch, its GraphQL and REST calls. */
function fakeGitHub(): FakeGitHub {
  const github = new FakeGitHub();
  github.mount();
  return github;
}

const writes = (github: FakeGitHub) =>
  github.calls
    .filter(
      (c) => c.path === "/graphql" && (c.body as { query: string }).query.includes("createCommitOnBranch"),
    )
    .map((c) => (c.body as { variables: { input: Record<string, unknown> } }).variables.input);

const graph = graphOf([{ id: "a" }, { id: "b", deps: ["a"] }]);

beforeEach(() => nock.disableNetConnect());
afterEach(() => {
  nock.cleanAll();
  nock.enableNetConnect();
});

describe("the GitHub state store", () => {
  const octokit = () => new Octokit({ auth: "test", request: { retries: 0 } });

  it("creates the run on an orphan state branch and reads it back with its version", async () => {
    const github = fakeGitHub();
    const store = new GitHubStateStore(octokit(), "octo", "demo", new StateCache());
    const engine = createEngine(graph);
    const started = await startRun(store, engine, 0);
    expect(started.created).toBe(true);
    expect(github.calls.find((c) => c.path.endsWith("/git/commits"))!.body).toMatchObject({ parents: [] });
    // The run's folder: its index and its task records, readable with git show.
    expect(JSON.parse(github.file("agentrelay-state/g", "run-1/run.json")!)).toMatchObject({
      $layout: { version: 2, buckets: 1 },
      tasks: {},
    });
    expect(JSON.parse(github.file("agentrelay-state/g", "run-1/tasks/000.json")!).tasks.a).toEqual(
      started.state.tasks.a,
    );
    expect(github.state("g/1")).toEqual(started.state);
    // Read from GitHub, and from what this process just wrote (the version names the content).
    const loaded = await store.load("g/1", { fresh: true });
    expect(loaded).toEqual({ state: started.state, version: started.version, buckets: 1 });
    const reads = github.calls.length;
    expect(await store.load("g/1")).toEqual({
      state: started.state,
      version: started.version,
      buckets: 1,
      cached: true,
    });
    expect(github.calls.length).toBe(reads);
    expect(await store.load("g/2")).toBeNull();
    expect(await new GitHubStateStore(octokit(), "octo", "demo").load("other/1")).toBeNull();
  });

  it("writes only on top of the version read (createCommitOnBranch with expectedHeadOid)", async () => {
    const github = fakeGitHub();
    const store = new GitHubStateStore(octokit(), "octo", "demo");
    const engine = createEngine(graph);
    const { version, state } = await startRun(store, engine, 0);
    const host = new RecordingHost(store, engine);
    await drive(host, "g/1", [{ type: "workstream_prepared", workstream: "default", at: 1 }]);
    expect(host.once.map((e) => e.type)).toContain("dispatch");
    const write = writes(github).at(-1)!;
    expect(write).toMatchObject({
      expectedHeadOid: version,
      branch: { branchName: "agentrelay-state/g" },
      message: { headline: "g/1: state 2" },
    });
    // A writer still holding the old version is refused, and nothing changes.
    expect(await store.compareAndSwap("g/1", version, { ...state, seq: 99 })).toBeNull();
    expect((await store.load("g/1"))!.state.tasks.a!.status).toBe("running");
  });

  it("lets exactly one of two replicas apply the same event", async () => {
    fakeGitHub();
    const store = new GitHubStateStore(octokit(), "octo", "demo");
    const hosts = [0, 1].map(() => new RecordingHost(store, createEngine(graph)));
    await startRun(store, hosts[0]!.engine, 0);
    await Promise.all(
      hosts.map((host) =>
        drive(host, "g/1", [{ type: "workstream_prepared", workstream: "default", at: 1 }]),
      ),
    );
    expect(hosts.flatMap((h) => h.once).filter((e) => e.type === "dispatch")).toHaveLength(1);
  });

  it("resumes a run stored as one document (the earlier format) and rewrites it in folders once", async () => {
    const github = fakeGitHub();
    const engine = createEngine(graph);
    const { state } = engine.start(0);
    github.commit("agentrelay-state/g", { "run-1.json": JSON.stringify(state) });
    const store = new GitHubStateStore(octokit(), "octo", "demo");
    expect((await store.load("g/1"))!.state).toEqual(state);
    expect(await store.runNumbers("g")).toEqual([1]);
    await drive(new RecordingHost(store, engine), "g/1", [
      { type: "workstream_prepared", workstream: "default", at: 1 },
    ]);
    expect(writes(github).at(-1)!.fileChanges).toMatchObject({ deletions: [{ path: "run-1.json" }] });
    expect(github.file("agentrelay-state/g", "run-1.json")).toBeUndefined();
    const resumed = (await new GitHubStateStore(octokit(), "octo", "demo").load("g/1"))!.state;
    expect(resumed.tasks.a!.status).toBe("running");
    expect(resumed.tasks.b).toEqual(state.tasks.b);
  });

  it("writes the index and the touched task's bucket, not the run", async () => {
    const github = fakeGitHub();
    const wide = graphOf(Array.from({ length: 300 }, (_, i) => ({ id: `t${i}` })));
    const engine = createEngine(wide);
    const store = new GitHubStateStore(octokit(), "octo", "demo");
    await startRun(store, engine, 0);
    await drive(new RecordingHost(store, engine), "g/1", [
      { type: "workstream_prepared", workstream: "default", at: 1 },
    ]);
    const paths = (writes(github).at(-1)!.fileChanges as { additions: { path: string }[] }).additions.map(
      (a) => a.path,
    );
    // 300 tasks lie in 10 buckets: t0 started, so its bucket and the index change.
    expect(paths).toEqual([expect.stringMatching(/^run-1\/tasks\/00\d\.json$/), "run-1/run.json"]);
    expect(github.state("g/1").tasks.t0!.status).toBe("running");
  });

  it("does not create a run twice", async () => {
    fakeGitHub();
    const engine = createEngine(graph);
    const first = await startRun(new GitHubStateStore(octokit(), "octo", "demo"), engine, 0);
    const second = await startRun(new GitHubStateStore(octokit(), "octo", "demo"), engine, 5);
    expect(first.created).toBe(true);
    expect(second).toMatchObject({ created: false, effects: [] });
    expect(second.state.startedAt).toBe(0);
  });
});

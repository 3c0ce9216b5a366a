import { Octokit } from "@octokit/rest";
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/engine.ts";
import { record, startRun } from "../../src/engine/store.ts";
import { GitHubStateStore } from "../../src/github/state-store.ts";
import { graphOf } from "../support/graphs.ts";

/**
 * GitHub answered by nock: a state branch kept in memory behind the GraphQL read query,
 * createCommitOnBranch (refusing a stale expectedHeadOid as GitHub does) and the REST calls that
 * create the orphan branch.
 */
function fakeGitHub() {
  const branches = new Map<string, { oid: string; files: Record<string, string> }>();
  let commits = 0;
  const calls: { kind: string; body: Record<string, unknown> }[] = [];
  const api = nock("https://api.github.com").persist();
  api.post("/graphql").reply((_, raw) => {
    const body = raw as { query: string; variables: Record<string, unknown> };
    if (body.query.includes("createCommitOnBranch")) {
      const input = body.variables.input as {
        branch: { branchName: string };
        expectedHeadOid: string;
        fileChanges: { additions: { path: string; contents: string }[] };
      };
      calls.push({ kind: "write", body: input as unknown as Record<string, unknown> });
      const branch = branches.get(input.branch.branchName);
      if (!branch || branch.oid !== input.expectedHeadOid) {
        return [
          200,
          {
            data: { createCommitOnBranch: null },
            errors: [
              {
                type: "STALE_DATA",
                message: `Expected branch to point to "${input.expectedHeadOid}" but it did not. Pull and try again.`,
              },
            ],
          },
        ];
      }
      for (const a of input.fileChanges.additions)
        branch.files[a.path] = Buffer.from(a.contents, "base64").toString("utf8");
      branch.oid = `c${++commits}`;
      return [200, { data: { createCommitOnBranch: { commit: { oid: branch.oid } } } }];
    }
    calls.push({ kind: "read", body: body.variables });
    const branch = branches.get(String(body.variables.ref).replace("refs/heads/", ""));
    const ref = branch
      ? {
          target: {
            oid: branch.oid,
            tree: {
              entries: Object.entries(branch.files).map(([name, text]) => ({ name, object: { text } })),
            },
          },
        }
      : null;
    return [200, { data: { repository: { ref } } }];
  });
  api.post("/repos/o/r/git/trees").reply((_, body) => {
    calls.push({ kind: "tree", body: body as Record<string, unknown> });
    return [201, { sha: "tree1" }];
  });
  api.post("/repos/o/r/git/commits").reply((_, body) => {
    calls.push({ kind: "commit", body: body as Record<string, unknown> });
    return [201, { sha: `c${++commits}` }];
  });
  api.post("/repos/o/r/git/refs").reply((_, raw) => {
    const body = raw as { ref: string; sha: string };
    calls.push({ kind: "ref", body });
    const name = body.ref.replace("refs/heads/", "");
    if (branches.has(name)) return [422, { message: "Reference already exists" }];
    branches.set(name, { oid: body.sha, files: { "README.md": "state\n" } });
    return [201, { ref: body.ref, object: { sha: body.sha } }];
  });
  return { branches, calls };
}

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
    const store = new GitHubStateStore(octokit(), "o", "r");
    const engine = createEngine(graph);
    const started = await startRun(store, engine, 0);
    expect(started.created).toBe(true);
    expect(github.calls.find((c) => c.kind === "commit")!.body).toMatchObject({ parents: [] });
    expect(JSON.parse(github.branches.get("agentrelay-state/g")!.files["run-1.json"]!)).toEqual(
      started.state,
    );
    // Read from GitHub, and from what this process just wrote (the version names the content).
    const loaded = await store.load("g/1", { fresh: true });
    expect(loaded).toEqual({ state: started.state, version: started.version });
    const reads = github.calls.length;
    expect(await store.load("g/1")).toEqual({ state: started.state, version: started.version, cached: true });
    expect(github.calls.length).toBe(reads);
    expect(await store.load("g/2")).toBeNull();
    expect(await new GitHubStateStore(octokit(), "o", "r").load("other/1")).toBeNull();
  });

  it("writes only on top of the version read (createCommitOnBranch with expectedHeadOid)", async () => {
    const github = fakeGitHub();
    const store = new GitHubStateStore(octokit(), "o", "r");
    const engine = createEngine(graph);
    const { version, state } = await startRun(store, engine, 0);
    const next = await record(store, engine, "g/1", {
      type: "workstream_prepared",
      workstream: "default",
      at: 1,
    });
    expect(next.effects.map((e) => e.type)).toContain("dispatch");
    const write = github.calls.filter((c) => c.kind === "write").at(-1)!.body;
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
    const store = new GitHubStateStore(octokit(), "o", "r");
    const engines = [createEngine(graph), createEngine(graph)];
    await startRun(store, engines[0]!, 0);
    const results = await Promise.all(
      engines.map((e) =>
        record(store, e, "g/1", { type: "workstream_prepared", workstream: "default", at: 1 }),
      ),
    );
    expect(results.flatMap((r) => r.effects).filter((e) => e.type === "dispatch")).toHaveLength(1);
  });

  it("does not create a run twice", async () => {
    fakeGitHub();
    const engine = createEngine(graph);
    const first = await startRun(new GitHubStateStore(octokit(), "o", "r"), engine, 0);
    const second = await startRun(new GitHubStateStore(octokit(), "o", "r"), engine, 5);
    expect(first.created).toBe(true);
    expect(second).toMatchObject({ created: false, effects: [] });
    expect(second.state.startedAt).toBe(0);
  });
});

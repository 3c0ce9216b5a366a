/**
 * GitHub's GraphQL API cuts `Blob.text` at 512,000 bytes (the fake does so in every test). A large
 * graph pins a graph.yaml over that size, and a large run's parts may pass it too: the state store
 * reads every cut blob whole through the git blobs API; a cut blob that cannot be read whole is damage
 * named in one line, never a cut text.
 */
import { Octokit } from "@octokit/rest";
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/engine.ts";
import { StateCache } from "../../src/github/state-cache.ts";
import { GitHubStateStore } from "../../src/github/state-store.ts";
import type { StoredRun } from "../../src/protocol/stored-run.ts";
import { FakeGitHub } from "../../harness/fake-github.ts";
import { GRAPHQL_BLOB_TEXT_BYTES } from "../../harness/fake-state.ts";
import { graphOf } from "../support/graphs.ts";

beforeEach(() => nock.disableNetConnect());
afterEach(() => {
  nock.cleanAll();
  nock.enableNetConnect();
});

const octokit = () => new Octokit({ auth: "test", request: { retries: 0 } });

/** A started run of `graph` whose pinned graph text is `text`. */
function runWith(text: string): StoredRun {
  const { state } = createEngine(graphOf([{ id: "a" }, { id: "b", deps: ["a"] }])).start(0);
  return {
    ...state,
    source: { path: ".workflow/g.yaml", commit: "c".repeat(40), branch: "main", text },
  } as StoredRun;
}

describe("state reads with GitHub's GraphQL text limit on", () => {
  const big = `# ${"a long comment line of the graph file\n# ".repeat(16_000)}\nname: g\n`;

  it("read a pinned graph over 512,000 bytes whole, by its blob id", async () => {
    expect(Buffer.byteLength(big)).toBeGreaterThan(GRAPHQL_BLOB_TEXT_BYTES);
    const github = new FakeGitHub();
    github.mount();
    const run = runWith(big);
    expect(
      await new GitHubStateStore(octokit(), "octo", "demo").compareAndSwap("g/1", null, run),
    ).not.toBeNull();
    const loaded = await new GitHubStateStore(octokit(), "octo", "demo", new StateCache()).load("g/1", {
      fresh: true,
    });
    expect((loaded!.state as StoredRun).source.text).toBe(big);
    expect(github.log(/GET \/repos\/octo\/demo\/git\/blobs\//)).toHaveLength(1);
  });

  it("call a cut blob that cannot be read whole damage, naming it in one line", async () => {
    const github = new FakeGitHub();
    github.mount();
    await new GitHubStateStore(octokit(), "octo", "demo").compareAndSwap("g/1", null, runWith(big));
    github.fault = (call) => (/\/git\/blobs\//.test(call.path) ? [404, { message: "Not Found" }] : null);
    const reading = new GitHubStateStore(octokit(), "octo", "demo", new StateCache()).load("g/1", {
      fresh: true,
    });
    await expect(reading).rejects.toThrow(
      /^graph\.yaml of run g\/1 was cut by GitHub's GraphQL API and could not be read whole: .*\(run-1\/graph\.yaml on the branch agentrelay-state\/g at [0-9a-f]{12}\): nothing was changed/,
    );
  });

  it("is the fake's default: a test that turns the limit off reads the text in one query", async () => {
    const github = new FakeGitHub();
    github.mount();
    github.limits.blobText = false;
    await new GitHubStateStore(octokit(), "octo", "demo").compareAndSwap("g/1", null, runWith(big));
    const loaded = await new GitHubStateStore(octokit(), "octo", "demo", new StateCache()).load("g/1", {
      fresh: true,
    });
    expect((loaded!.state as StoredRun).source.text).toBe(big);
    expect(github.log(/\/git\/blobs\//)).toEqual([]);
  });
});

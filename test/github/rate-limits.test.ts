/**
 * GitHub's rate limits: the fake enforces each as GitHub documents it (harness/fake-rate-limits.ts),
 * and the app's clients pace their writes under one budget per installation (write-pacing.ts), on the
 * fake's clock, so that a run loses nothing and waits only as long as the limits say.
 */
import { Octokit } from "@octokit/rest";
import { describe, expect, it } from "vitest";
import { limitedRun } from "../../bench/github-limits.ts";
import { repoContextOf } from "../../src/app/context.ts";
import { readFileAt } from "../../src/github/client.ts";
import { DEFAULT_CONFIG } from "../../src/github/client.ts";
import { finishJob, startApp, startJob } from "../../harness/app.ts";
import { FakeGitHub } from "../../harness/fake-github.ts";
import { DIAMOND } from "../../harness/graphs.ts";
import { graphqlProblem } from "../../harness/graphql-schema.ts";
import { FakeClock, LIMITS, RateLimits } from "../../harness/fake-rate-limits.ts";
import { chainsGraph } from "../../harness/graphs.ts";
import {
  priority,
  writeBudget,
  writeBudgetOf,
  WriteBudgetSpent,
  WriteDeferred,
  writePacing,
  WRITES_PER_HOUR,
} from "../../src/github/write-pacing.ts";

const MINUTE = 60_000;
const write = { method: "POST", path: "/repos/octo/demo/issues", body: {} };
const read = { method: "GET", path: "/repos/octo/demo/pulls", body: undefined };
const retryAfter = (reply: unknown[] | null) => Number((reply?.[2] as Record<string, string>)["retry-after"]);

describe("the fake's rate limits", () => {
  const limits = () => {
    const clock = new FakeClock();
    return { clock, limits: new RateLimits(clock.now) };
  };

  it("allow 80 writes a minute, then answer 403 with retry-after until the minute has passed", () => {
    const { clock, limits: l } = limits();
    for (let i = 0; i < LIMITS.writesPerMinute; i++) expect(l.admit(write)).toBeNull();
    const refused = l.admit(write);
    expect(refused?.[0]).toBe(403);
    expect((refused?.[1] as { message: string }).message).toMatch(/secondary rate limit/);
    expect(retryAfter(refused)).toBeGreaterThanOrEqual(59);
    clock.advance(retryAfter(refused) * 1000);
    expect(l.admit(write)).toBeNull();
  });

  it("allow 500 writes an hour, however they are spread", () => {
    const { clock, limits: l } = limits();
    for (let i = 0; i < LIMITS.writesPerHour; i++) {
      expect(l.admit(write)).toBeNull();
      clock.advance(MINUTE / 60); // 60 a minute: under the minute's limit
    }
    const refused = l.admit(write);
    expect(refused?.[0]).toBe(403);
    // The oldest write leaves the hour about 51 minutes later.
    expect(retryAfter(refused)).toBeGreaterThan(50 * 60);
    expect(l.admit(read)).toBeNull(); // reads are not content
  });

  it("count REST and GraphQL points apart: 900 a minute for REST, 2,000 for GraphQL", () => {
    const { limits: l } = limits();
    for (let i = 0; i < LIMITS.restPointsPerMinute; i++) expect(l.admit(read)).toBeNull();
    expect(l.admit(read)?.[0]).toBe(403);
    const query = { method: "POST", path: "/graphql", body: { query: "query { viewer { login } }" } };
    for (let i = 0; i < LIMITS.graphqlPointsPerMinute; i++) expect(l.admit(query)).toBeNull();
    expect(l.admit(query)?.[0]).toBe(403);
  });

  it("tell the primary limit in headers, and answer 403 with remaining 0 past 5,000 an hour", () => {
    const { clock, limits: l } = limits();
    l.admit(read);
    expect(l.headers()["x-ratelimit-remaining"]).toBe(String(LIMITS.requestsPerHour - 1));
    for (let i = 1; i < LIMITS.requestsPerHour; i++) {
      if (i % 800 === 0) clock.advance(MINUTE); // under the points' limit
      expect(l.admit(read)).toBeNull();
    }
    const refused = l.admit(read);
    expect(refused?.[0]).toBe(403);
    expect(refused?.[2]).toMatchObject({ "x-ratelimit-remaining": "0" });
    expect(Number((refused?.[2] as Record<string, string>)["x-ratelimit-reset"]) * 1000).toBeGreaterThan(
      clock.now(),
    );
  });

  it("leave the app's own calls (its JWT's) out of the installation's limits", () => {
    const { limits: l } = limits();
    const mint = { method: "POST", path: "/app/installations/42/access_tokens", body: {} };
    for (let i = 0; i < 200; i++) expect(l.admit(mint)).toBeNull();
    expect(l.admit(write)).toBeNull();
  });

  it("refuse more than 100 requests in flight at once", async () => {
    const gh = new FakeGitHub();
    const answers = await Promise.all(
      Array.from({ length: 110 }, () => gh.serve("GET", "/repos/octo/demo/pulls", undefined)),
    );
    expect(answers.filter(([status]) => status === 403)).toHaveLength(10);
    expect(gh.rateLimits.refused.concurrent).toBe(10);
  });
});

/** An Octokit as the app's clients are built (pacing plugin), answered by `gh` on its clock. */
function pacedClient(gh: FakeGitHub) {
  const Paced = Octokit.plugin(writePacing);
  return new Paced({
    auth: "token",
    request: { fetch: gh.fetch, retries: 0 },
    pacing: { clock: gh.clock, maxWaitMs: Infinity, installation: `test-${Math.random()}` },
  } as ConstructorParameters<typeof Paced>[0]);
}

const newIssue = (octokit: ReturnType<typeof pacedClient>, title: string) =>
  octokit.rest.issues.create({ owner: "octo", repo: "demo", title });

describe("the app's write pacing", () => {
  it("waits for its turn instead of being refused: 200 writes go through in 3 simulated minutes", async () => {
    const gh = new FakeGitHub();
    const octokit = pacedClient(gh);
    const start = gh.clock.now();
    for (let i = 0; i < 200; i++) await newIssue(octokit, `issue ${i}`);
    expect(gh.issues).toHaveLength(200);
    expect(gh.rateLimits.refused.secondary).toBe(0);
    const minutes = (gh.clock.now() - start) / MINUTE;
    expect(minutes).toBeGreaterThanOrEqual(2);
    expect(minutes).toBeLessThan(3.5);
  });

  it("waits out a limit's answer as GitHub says and tries again: nothing is lost", async () => {
    const gh = new FakeGitHub();
    let refusals = 2;
    gh.fault = (call) =>
      call.method === "POST" && refusals-- > 0
        ? [429, { message: "You have exceeded a secondary rate limit." }, { "retry-after": "30" }]
        : null;
    const start = gh.clock.now();
    await newIssue(pacedClient(gh), "after two refusals");
    expect(gh.issues.map((i) => i.title)).toEqual(["after two refusals"]);
    expect(gh.clock.now() - start).toBeGreaterThanOrEqual(60_000);
  });

  it("lets status edits and check runs of successes yield while the budget is tight, never progress", async () => {
    const gh = new FakeGitHub();
    gh.limits.rate = false; // this test fills the budget faster than GitHub allows, to see it yield
    const octokit = pacedClient(gh);
    const budget = writeBudgetOf(octokit)!;
    for (let i = 0; i < 0.7 * WRITES_PER_HOUR; i++) budget.record();
    gh.clock.advance(2 * MINUTE); // the minute's window is free again; the hour's is 70% used
    const comment = octokit.rest.issues.createComment({
      owner: "octo",
      repo: "demo",
      issue_number: 1,
      body: "status",
      ...priority("view"),
    });
    await expect(comment).rejects.toBeInstanceOf(WriteDeferred);
    expect(gh.calls).toHaveLength(0);
    await newIssue(octokit, "progress goes on");
    expect(gh.issues).toHaveLength(1);
  });

  it("fails a write in one line when the hour's budget is spent for longer than a handler waits", async () => {
    const gh = new FakeGitHub();
    const Paced = Octokit.plugin(writePacing);
    const octokit = new Paced({
      auth: "token",
      request: { fetch: gh.fetch, retries: 0 },
      pacing: { clock: gh.clock, maxWaitMs: 15 * MINUTE, installation: `test-${Math.random()}` },
    } as ConstructorParameters<typeof Paced>[0]);
    const budget = writeBudgetOf(octokit)!;
    for (let i = 0; i < WRITES_PER_HOUR; i++) budget.record();
    const refused = newIssue(octokit, "an hour too soon");
    await expect(refused).rejects.toBeInstanceOf(WriteBudgetSpent);
    await expect(refused).rejects.toThrow(
      /^GitHub's write limit for this installation is spent for \d+ minutes/,
    );
    expect(gh.calls).toHaveLength(0); // nothing half-done: the reconciler carries the work out later
  });

  it("edits the status less often as the hour's budget fills", () => {
    const gh = new FakeGitHub();
    const budget = writeBudgetOf(pacedClient(gh))!;
    expect(budget.statusInterval(10_000)).toBe(10_000);
    for (let i = 0; i < 0.95 * WRITES_PER_HOUR; i++) budget.record();
    expect(budget.statusInterval(10_000)).toBeGreaterThanOrEqual(4 * MINUTE);
  });
});

describe("a run with GitHub's limits on", () => {
  it("goes to its end with nothing lost: every task merged once, every refused write tried again", async () => {
    const row = await limitedRun("chains", chainsGraph(60, 5));
    expect(row.outcome).toBe("succeeded");
    expect(row.lost).toBe(0);
    expect(row.dispatched).toBe(60);
    expect(row["tried again"]).toBe(row["403/429"]);
    // The minimum an attempt needs is 5 (dispatch, token, PR, merge, state); with the budget ample,
    // each success's check run is made too, and the workstreams' own writes and status edits come on top.
    expect(Number(row["writes/attempt"])).toBeLessThan(7);
  });

  it("starts a 10,000-task graph (a pinned graph over GraphQL's 512,000 bytes) and its attempts go through, read whole", async () => {
    const graph = chainsGraph(10_000, 20);
    expect(Buffer.byteLength(graph)).toBeGreaterThan(512_000);
    const row = await limitedRun("chains", graph, 100);
    expect(row["cold read"]).toBe("whole");
    expect(row.lost).toBe(0);
    expect(row.dispatched).toBeGreaterThanOrEqual(100);
  });
});

describe("the contents API's size limits", () => {
  it("answers JSON without the text past 1 MB, and the app reads files raw, whole", async () => {
    const gh = new FakeGitHub();
    const big = `# ${"x".repeat(2 * 1024 * 1024)}\n`;
    gh.commit("main", { ".workflow/big.yaml": big });
    const octokit = new Octokit({ request: { fetch: gh.fetch } });
    const json = await octokit.rest.repos.getContent({
      owner: "octo",
      repo: "demo",
      path: ".workflow/big.yaml",
    });
    expect(json.data).toMatchObject({ encoding: "none", content: "" });
    const ctx = repoContextOf(
      octokit,
      { name: "demo", owner: { login: "octo" }, default_branch: "main" },
      DEFAULT_CONFIG,
      () => {},
    );
    expect(await readFileAt(ctx, ".workflow/big.yaml", "main")).toBe(big);
  });
});

describe("GitHub's GraphQL node limits", () => {
  const history = (page: string) =>
    `query($n: Int!) { repository(owner: "o", name: "r") { pullRequests(${page}) { nodes { number } } } }`;
  const unpaged = `query { repository(owner: "o", name: "r") { pullRequests { nodes { number } } } }`;

  it("refuse a connection without a page size, or with one over 100, and pass one within", () => {
    expect(graphqlProblem(unpaged)).toMatch(/`first` or `last` between 1 and 100/);
    expect(graphqlProblem(history("first: $n"), { n: 101 })).toMatch(/between 1 and 100/);
    expect(graphqlProblem(history("first: $n"), { n: 100 })).toBeNull();
  });

  it("refuse a query that reaches more than 500,000 nodes", () => {
    const nested = `query { repository(owner: "o", name: "r") { pullRequests(first: 100) { nodes {
      commits(first: 100) { nodes { commit { history(first: 100) { nodes { oid } } } } } } } } }`;
    expect(graphqlProblem(nested)).toMatch(/more than GitHub's 500000/);
  });
});

describe("a job's report when GitHub's write limit is spent", () => {
  it("is answered 503 with the reason in one line, and changes nothing, so that the runner tries again", async () => {
    const h = await startApp({}, "nock", 15 * MINUTE);
    try {
      await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
      const dispatch = h.gh.dispatches[0]!;
      const started = await startJob(h, dispatch);
      const before = JSON.stringify(h.gh.state("diamond/1"));
      const budget = writeBudget("42", h.gh.clock);
      for (let i = 0; i < WRITES_PER_HOUR; i++) budget.record();
      const report = await finishJob(h, dispatch, started);
      expect(report.status).toBe(503);
      expect(report.body.error).toMatch(
        /^GitHub's write limit for this installation is spent for \d+ minutes/,
      );
      expect(JSON.stringify(h.gh.state("diamond/1"))).toBe(before);
    } finally {
      await h.close();
    }
  });
});

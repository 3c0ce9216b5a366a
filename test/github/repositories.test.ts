/**
 * A run whose workstreams live in several repositories, driven on GitHub (the fake of several
 * repositories, harness/fake-repositories.ts, with the installation's token): the run's state stays
 * in the graph's repository; each workstream's branches, jobs, PRs and integration PR are in its own;
 * the client's task is dispatched in its repository only once the API's workstream landed in its own,
 * and what landed is what it is told (landed.json).
 */
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { FakeRepositories } from "../../harness/fake-repositories.ts";
import { RunDriver } from "../../src/github/driver.ts";
import { reconcileRun } from "../../src/app/reconcile.ts";
import { landedElsewhere } from "../../src/protocol/landed.ts";
import { parseRunGraph } from "../../src/protocol/run-source.ts";
import { API_THEN_CLIENT, installationContext, mountedRepositories } from "../support/repositories.ts";

let github: FakeRepositories;
beforeEach(() => {
  github = mountedRepositories([
    ["octo/api", 42],
    ["octo/web", 42],
  ]);
});
afterEach(() => {
  nock.cleanAll();
  nock.enableNetConnect();
  for (const gh of github.repositories.values()) gh.expectNoViolations();
});

const appContext = () => installationContext(github);

describe("a run across repositories on GitHub", () => {
  it("keeps each workstream in its repository, and starts the client once the API landed in its own", async () => {
    const [demo, api, web] = ["octo/demo", "octo/api", "octo/web"].map((r) => github.get(r)) as [
      ReturnType<FakeRepositories["get"]>,
      ReturnType<FakeRepositories["get"]>,
      ReturnType<FakeRepositories["get"]>,
    ];
    const path = ".workflow/api-client.yaml";
    const commit = demo.commit("main", { [path]: API_THEN_CLIENT });
    const source = { path, commit, branch: "main", text: API_THEN_CLIENT };
    const driver = new RunDriver(await appContext());
    const { runKey } = await driver.startOrResume(source, parseRunGraph(source));

    // The API's workstream and its first job are in octo/api; the run's state and issue in octo/demo.
    expect(api.branches.has("agentrelay/api-client/server/integration")).toBe(true);
    expect(api.dispatches.map((d) => d.inputs.task)).toEqual(["add-endpoint"]);
    // Its job is told where the run lives (the task workflow's `run-repository` input).
    expect(api.dispatches[0]!.inputs["run-repository"]).toBe("octo/demo");
    expect(demo.dispatches).toEqual([]);
    expect(web.dispatches).toEqual([]);
    expect(demo.branches.has("agentrelay-state/api-client")).toBe(true);
    expect([...demo.branches].map(([b]) => b).filter((b) => b.startsWith("agentrelay/"))).toEqual([]);
    expect(demo.issues.map((i) => i.title)).toEqual([`agentrelay run ${runKey}`]);

    // The API's job pushes its branch in octo/api and succeeds: its PR and integration PR land there.
    const branch = "agentrelay/api-client/add-endpoint";
    api.branches.set(branch, api.branch("agentrelay/api-client/server/integration"));
    api.commit(branch, { "src/items.ts": "export const items = '/v2/items';\n" }, "Add GET /v2/items");
    const at = Date.now();
    await driver.drive(runKey, [
      { type: "job_started", task: "add-endpoint", attempt: 1, at },
      { type: "job_succeeded", task: "add-endpoint", attempt: 1, at, summary: "Added GET /v2/items" },
    ]);
    await driver.drive(runKey, [], { pending: true });
    expect(api.file("main", "src/items.ts")).toContain("/v2/items");
    expect(api.pulls.map((p) => `${p.head} -> ${p.base} ${p.merged ? "merged" : p.state}`)).toEqual([
      "agentrelay/api-client/add-endpoint -> agentrelay/api-client/server/integration merged",
      "agentrelay/api-client/server/integration -> main merged",
    ]);
    expect(demo.pulls).toEqual([]);
    // The status comment, in the graph's repository, names each PR's repository beside its number.
    const status = demo.comments.find((c) => c.body.includes("agentrelay:status"))!.body;
    const taskPr = api.pulls[0]!.number;
    expect(status).toContain(`[octo/api#${taskPr}](https://github.com/octo/api/pull/${taskPr})`);

    // Only now is the client's task dispatched, in octo/web, and it is told what landed in octo/api.
    expect(web.dispatches.map((d) => d.inputs.task)).toEqual(["use-endpoint"]);
    expect(web.branches.has("agentrelay/api-client/client/integration")).toBe(true);
    const loaded = (await driver.load(runKey, { fresh: true }))!;
    const task = loaded.engine.plan.tasks.get("use-endpoint")!;
    const [landed] = landedElsewhere(loaded.run, task, loaded.engine.plan);
    expect(landed).toMatchObject({
      workstream: "server",
      repository: { name: "api", fullName: "octo/api" },
      commit: api.branch("main"),
      pr: { url: expect.stringContaining("https://github.com/octo/api/pull/") },
      tasks: [{ id: "add-endpoint", summary: "Added GET /v2/items" }],
    });
  });

  it("waits with one line while the installation lost a repository mid-run, and goes on once it is back", async () => {
    const [demo, api, web] = ["octo/demo", "octo/api", "octo/web"].map((r) => github.get(r)) as [
      ReturnType<FakeRepositories["get"]>,
      ReturnType<FakeRepositories["get"]>,
      ReturnType<FakeRepositories["get"]>,
    ];
    const path = ".workflow/api-client.yaml";
    const commit = demo.commit("main", { [path]: API_THEN_CLIENT });
    const source = { path, commit, branch: "main", text: API_THEN_CLIENT };
    const driver = new RunDriver(await appContext());
    const { runKey } = await driver.startOrResume(source, parseRunGraph(source));
    const branch = "agentrelay/api-client/add-endpoint";
    api.branches.set(branch, api.branch("agentrelay/api-client/server/integration"));
    api.commit(branch, { "src/items.ts": "export const items = '/v2/items';\n" });

    // A person takes octo/web out of the app's installation while the API's task runs.
    github.uninstall("octo/web");
    const at = Date.now();
    await driver.drive(runKey, [
      { type: "job_started", task: "add-endpoint", attempt: 1, at },
      { type: "job_succeeded", task: "add-endpoint", attempt: 1, at, summary: "Added GET /v2/items" },
    ]);
    await driver.drive(runKey, [], { pending: true });
    expect(api.file("main", "src/items.ts")).toContain("/v2/items");
    expect(web.dispatches).toEqual([]);
    expect([...web.branches].map(([b]) => b)).toEqual(["main"]);
    const line =
      "octo/web: the app can no longer reach it (GitHub answered 404): add it back to the app's installation; its work waits and goes on by itself";
    const statusBody = () => demo.comments.find((c) => c.body.includes("agentrelay:status"))!.body;
    expect(statusBody()).toContain(`**Waiting for you**: ${line}`);
    let state = demo.state(runKey) as unknown as {
      outcome: string | null;
      workstreams: Record<string, { status: string }>;
    };
    expect(state.outcome).toBeNull();
    expect(state.workstreams.client!.status).not.toBe("failed");

    // Back in the installation: the next pass prepares the client's workstream and starts its task.
    github.install(42, "octo", ["octo/web"]);
    // The next handler (here the reconciler's pass) reads the repository afresh.
    await new RunDriver(await appContext()).drive(runKey, [], { pending: true });
    expect(web.dispatches.map((d) => d.inputs.task)).toEqual(["use-endpoint"]);
    expect(statusBody()).not.toContain(line);
    state = demo.state(runKey) as unknown as typeof state;
    expect(state.outcome).toBeNull();
  });
  it("finds each job in its workstream's repository, and a dispatch into a lost repository waits, then is made again", async () => {
    const [demo, api] = ["octo/demo", "octo/api"].map((r) => github.get(r)) as [
      ReturnType<FakeRepositories["get"]>,
      ReturnType<FakeRepositories["get"]>,
    ];
    const path = ".workflow/api-client.yaml";
    const text = `max_task_attempts: 2\n${API_THEN_CLIENT}`;
    const commit = demo.commit("main", { [path]: text });
    const source = { path, commit, branch: "main", text };
    let clock = Date.now();
    const ctx = { ...(await appContext()), now: () => clock };
    const { runKey } = await new RunDriver(ctx).startOrResume(source, parseRunGraph(source));
    type State = { tasks: Record<string, { status: string; attempt: number; attempts: unknown[] }> };
    const task = () => (demo.state(runKey) as unknown as State).tasks["add-endpoint"]!;

    // Its job waits in octo/api's queue past the grace a job has to appear: the reconciler finds it
    // there (not in octo/demo, where the run lives) and lets it be.
    expect(api.dispatches).toHaveLength(1);
    clock += 11 * 60_000;
    await reconcileRun(new RunDriver(ctx), runKey);
    expect(api.dispatches).toHaveLength(1);
    expect(task()).toMatchObject({ status: "running", attempt: 1 });

    // The job fails; before its retry is dispatched, a person takes octo/api out of the installation.
    github.uninstall("octo/api");
    await new RunDriver(ctx).drive(runKey, [
      { type: "job_started", task: "add-endpoint", attempt: 1, at: clock },
      { type: "job_failed", task: "add-endpoint", attempt: 1, reason: "the job failed", at: clock },
    ]);
    // The retry waits instead of failing for want of a repository, and the handler whose dispatch
    // found it lost says so at once, in the run and on its status comment.
    expect(api.dispatches).toHaveLength(1);
    expect(task()).toMatchObject({ status: "running", attempt: 2 });
    const line =
      "octo/api: the app can no longer reach it (GitHub answered 404): add it back to the app's installation; its work waits and goes on by itself";
    const statusBody = () => demo.comments.find((c) => c.body.includes("agentrelay:status"))!.body;
    expect(statusBody()).toContain(`**Waiting for you**: ${line}`);
    expect((demo.state(runKey) as { github?: { waits?: object } }).github?.waits).toEqual({
      "repository:octo/api": { person: true, line },
    });
    // The reconciler's pass (its repository unreachable, it decides nothing about the job) keeps it.
    clock += 11 * 60_000;
    await reconcileRun(new RunDriver(ctx), runKey);
    expect(task()).toMatchObject({ status: "running", attempt: 2 });
    expect(statusBody()).toContain(`**Waiting for you**: ${line}`);

    // Access is back: the reconciler sees no job for the dispatch and has it made again (the attempt
    // that never started does not count); nothing lost.
    github.install(42, "octo", ["octo/api"]);
    await reconcileRun(new RunDriver(ctx), runKey);
    expect(api.dispatches.map((d) => `${d.inputs.task} ${d.inputs.attempt}`)).toEqual([
      "add-endpoint 1",
      "add-endpoint 3",
    ]);
    expect(task().status).toBe("running");
    expect(statusBody()).not.toContain(line);
  });
});

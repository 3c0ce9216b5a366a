/**
 * A workstream's repository whose task workflow is older than the inputs the app sends (init ran there
 * before `run-repository` existed): GitHub refuses the dispatch (the fake checks a dispatch's inputs
 * against the workflow file as GitHub does, harness/fake-dispatch-inputs.ts). The attempt is not
 * spent, the run says in one line what to do, and once the file is brought up to date the reconciler
 * dispatches the task again; nothing is lost.
 */
import { readFileSync } from "node:fs";
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { FakeRepositories } from "../../harness/fake-repositories.ts";
import { refusedDispatchInputs } from "../../harness/fake-dispatch-inputs.ts";
import { actionsWorkflows } from "../../src/github/conformance/actions.ts";
import { UNDECLARED_INPUT_REFUSAL } from "../../src/github/conformance/event-cases.ts";
import { RunDriver } from "../../src/github/driver.ts";
import { reconcileRun } from "../../src/app/reconcile.ts";
import { parseRunGraph } from "../../src/protocol/run-source.ts";
import { API_THEN_CLIENT, installationContext, mountedRepositories } from "../support/repositories.ts";

const WORKFLOW = ".github/workflows/agentrelay-task.yml";
const CURRENT = readFileSync(
  new URL("../../templates/workflows/agentrelay-task.yml", import.meta.url),
  "utf8",
);
/** The task workflow as init wrote it before a workstream could live in another repository. */
const OLD = CURRENT.replace(/ {6}run-repository:\n(?: {8}.*\n)+/, "").replace(/ *run-repository: \$.*\n/, "");

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
});

describe("the fake checks a dispatch's inputs as GitHub does", () => {
  it("refuses an input the workflow does not declare, and a required one left out", () => {
    expect(OLD).not.toContain("run-repository");
    const sent = { run: "g/1", task: "t", attempt: "1", "state-version": "v", credential: "" };
    expect(refusedDispatchInputs(CURRENT, { ...sent, "run-repository": "octo/demo" })).toBeNull();
    expect(refusedDispatchInputs(OLD, { ...sent, "run-repository": "octo/demo", x: "1" })).toBe(
      'Unexpected inputs provided: ["run-repository", "x"]',
    );
    const { task: _left, ...withoutTask } = sent;
    expect(refusedDispatchInputs(CURRENT, withoutTask)).toBe("Required input 'task' not provided");
    // An input left out with a default takes it.
    const { credential: _default, ...withoutCredential } = sent;
    expect(refusedDispatchInputs(CURRENT, withoutCredential)).toBeNull();
    // A workflow dispatched with no inputs declared takes none; one without the trigger is refused for that.
    expect(refusedDispatchInputs("on: [push, workflow_dispatch]\n", { a: "1" })).toBe(
      'Unexpected inputs provided: ["a"]',
    );
    expect(refusedDispatchInputs("on: workflow_dispatch\n", {})).toBeNull();
    expect(refusedDispatchInputs("on: push\n", { a: "1" })).toBeNull();
    // What the conformance suite expects of GitHub for its workflow A is what the fake answers.
    const a = actionsWorkflows()[".github/workflows/agentrelay-conformance-a.yml"];
    expect(`422 ${refusedDispatchInputs(a, { undeclared: "x" })}`).toBe(UNDECLARED_INPUT_REFUSAL);
  });
});

describe("a workstream's repository with an old task workflow", () => {
  it("waits with one line, spends no attempt, and dispatches again once the workflow is brought up to date", async () => {
    const [demo, api] = ["octo/demo", "octo/api"].map((r) => github.get(r)) as [
      ReturnType<FakeRepositories["get"]>,
      ReturnType<FakeRepositories["get"]>,
    ];
    api.commit("main", { [WORKFLOW]: OLD }, "agentrelay init, long ago");
    const path = ".workflow/api-client.yaml";
    const text = `max_task_attempts: 1\n${API_THEN_CLIENT}`;
    const commit = demo.commit("main", { [path]: text });
    const source = { path, commit, branch: "main", text };
    let clock = Date.now();
    const ctx = { ...(await installationContext(github)), now: () => clock };
    const { runKey } = await new RunDriver(ctx).startOrResume(source, parseRunGraph(source));

    type State = {
      outcome: string | null;
      github: { waits?: Record<string, { line: string }> };
      tasks: Record<string, { status: string; attempt: number; attemptBase: number }>;
    };
    const state = () => demo.state(runKey) as unknown as State;
    const statusBody = () => demo.comments.find((c) => c.body.includes("agentrelay:status"))!.body;
    const line =
      "octo/api's .github/workflows/agentrelay-task.yml is older than this run needs" +
      ' (GitHub says "Unexpected inputs provided: [\\"run-repository\\"]"): run `agentrelay init` there' +
      " (or `agentrelay doctor`); its tasks wait and go on by themselves";

    // GitHub refused the dispatch: nothing started, the task still runs its first attempt, and the
    // run says at once, in one line, what to do (not GitHub's reason as a failure).
    expect(api.dispatches).toEqual([]);
    expect(state().tasks["add-endpoint"]).toMatchObject({ status: "running", attempt: 1 });
    expect(state().outcome).toBeNull();
    expect(statusBody()).toContain(`**Waiting for you**: ${line.replaceAll('\\"', '"')}`);

    // The reconciler's pass, the workflow still old: nothing is dispatched, nothing is lost.
    clock += 11 * 60_000;
    await reconcileRun(new RunDriver(ctx), runKey);
    expect(api.dispatches).toEqual([]);
    expect(state().tasks["add-endpoint"]).toMatchObject({ status: "running", attempt: 1 });
    expect(statusBody()).toContain("older than this run needs");

    // Past the attempt's deadline (two hours), still old: the waiting attempt is not timed out and
    // counted (max_task_attempts is 1), but made again, and refused again.
    clock += 2 * 60 * 60_000;
    await reconcileRun(new RunDriver(ctx), runKey);
    expect(api.dispatches).toEqual([]);
    expect(state().outcome).toBeNull();
    expect(state().tasks["add-endpoint"]).toMatchObject({ status: "running", attempt: 2 });
    expect(statusBody()).toContain("older than this run needs");

    // Someone runs `agentrelay init` in octo/api: the next pass dispatches the task again, and the
    // attempts GitHub refused do not count.
    api.commit("main", { [WORKFLOW]: CURRENT }, "agentrelay init");
    clock += 60_000;
    await reconcileRun(new RunDriver(ctx), runKey);
    expect(api.dispatches.map((d) => `${d.inputs.task} ${d.inputs.attempt}`)).toEqual(["add-endpoint 3"]);
    const task = state().tasks["add-endpoint"]!;
    expect(task).toMatchObject({ status: "running", attempt: 3 });
    expect(task.attempt - task.attemptBase).toBe(1);
    expect(statusBody()).not.toContain("older than this run needs");
    expect(state().github.waits ?? {}).toEqual({});
  });

  it("waits the same in the graph's own repository, whose workflow lacks an input every dispatch sends", async () => {
    const demo = github.get("octo/demo");
    // Before `credential` existed: GitHub refuses the input it does not declare.
    const older = CURRENT.replace(/ {6}credential:\n(?: {8}.*\n)+/, "");
    demo.commit("main", { [WORKFLOW]: older });
    const text = "name: solo\nmax_task_attempts: 1\ntasks:\n  - id: only\n    description: Do it\n";
    const path = ".workflow/solo.yaml";
    const commit = demo.commit("main", { [path]: text });
    const source = { path, commit, branch: "main", text };
    let clock = Date.now();
    const ctx = { ...(await installationContext(github)), now: () => clock };
    const { runKey } = await new RunDriver(ctx).startOrResume(source, parseRunGraph(source));
    const statusBody = () => demo.comments.find((c) => c.body.includes("agentrelay:status"))!.body;
    expect(demo.dispatches).toEqual([]);
    expect(statusBody()).toContain(
      `**Waiting for you**: octo/demo's .github/workflows/agentrelay-task.yml is older than this run needs (GitHub says "Unexpected inputs provided: ["credential"]")`,
    );
    demo.commit("main", { [WORKFLOW]: CURRENT });
    clock += 60_000;
    await reconcileRun(new RunDriver(ctx), runKey);
    expect(demo.dispatches.map((d) => `${d.inputs.task} ${d.inputs.attempt}`)).toEqual(["only 2"]);
    expect(statusBody()).not.toContain("older than this run needs");
  });
});

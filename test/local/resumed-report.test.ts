/**
 * The report of a resumed local run says, as the first run's did, that the attempts' network was not
 * filtered (issue 44, item 9): after an interrupted run, and after the graph changed between runs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runReport } from "../../src/cli/run-report.ts";
import { runLocal } from "../../src/local/run.ts";
import { demoAgent } from "../../src/scripted/demo-agent.ts";
import { type ScriptedModelServer, startScriptedModel } from "../../src/scripted/model-server.ts";
import { WAIT_MS } from "../../harness/patience.ts";
import { tempRepo } from "../support/git.ts";
import { scriptedRun } from "../support/local-run.ts";

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel(demoAgent);
});
afterAll(() => server.close());

/** Two tasks in a chain whose attempts' network is not filtered: the graph allows every host. */
const CHAIN =
  'name: g\nworkstreams:\n  - id: w\n    auto_merge: true\ntasks:\n  - id: first\n    workstream_id: w\n    description: Write notes.\n    network: { allow: ["*"] }\n  - id: second\n    workstream_id: w\n    dependencies: [first]\n    description: Write more notes.\n    network: { allow: ["*"] }\n';
const UNFILTERED = 'network: not filtered, as the graph allows every host (network.allow: ["*"])';

const options = (repo: string, text: string, signal?: AbortSignal) => ({
  ...scriptedRun(repo, ".workflow/g.yaml", text, server.url),
  attemptTimeoutMs: WAIT_MS,
  gateTimeoutMs: WAIT_MS,
  ...(signal ? { signal } : {}),
});

/** The report's lines from its headline to the blank line before the tasks. */
const head = (report: string) => report.trimStart().split("\n\n")[0]!.split("\n");

describe("a resumed local run's report", () => {
  it("keeps the network's line after an interrupted run and after a changed graph", async () => {
    const repo = await tempRepo();
    // Interrupted once the first task has merged, while the second runs.
    const stop = new AbortController();
    const first = await runLocal({
      ...options(repo, CHAIN, stop.signal),
      onState: (s) => {
        if (s.tasks.second?.status === "running") stop.abort();
      },
    });
    expect(first.state.outcome).toBeNull();
    const graph = options(repo, CHAIN).graph;
    expect(head(runReport(first.state, repo, graph))).toEqual([
      "Run g/1: not finished: run `agentrelay run` again to go on",
      UNFILTERED,
    ]);

    // Resumed: the second task's attempt was lost and runs again.
    const resumed = await runLocal(options(repo, CHAIN));
    expect(resumed.state.outcome).toBe("succeeded");
    expect(head(runReport(resumed.state, repo, graph))).toEqual(["Run g/1: succeeded", UNFILTERED]);

    // The graph changes (the finished second task's words): the run keeps its record and says so again.
    const changed = CHAIN.replace("Write more notes.", "Write more notes, with a table.");
    const again = await runLocal(options(repo, changed));
    expect(again.drift).toEqual(["task 'second' changed after it finished; it is kept as it is"]);
    expect(head(runReport(again.state, repo, options(repo, changed).graph))).toEqual([
      "Run g/1: succeeded",
      UNFILTERED,
    ]);
  });
});

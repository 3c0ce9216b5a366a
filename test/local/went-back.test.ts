/**
 * A local run whose state ref was moved back to an older version (security case 9): the next `run`
 * takes what the integration branch merged since as merged, says so in one line, and runs nothing
 * again.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { git } from "../../src/attempt/git.ts";
import { stateRef } from "../../src/local/git-store.ts";
import { runLocal } from "../../src/local/run.ts";
import { demoAgent } from "../../src/scripted/demo-agent.ts";
import { type ScriptedModelServer, startScriptedModel } from "../../src/scripted/model-server.ts";
import { tempRepo } from "../support/git.ts";
import { scriptedRun } from "../support/local-run.ts";
import { WAIT_MS } from "../../harness/patience.ts";

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel(demoAgent);
});
afterAll(() => server.close());

const GRAPH = `name: g\nworkstreams:\n  - id: w\ntasks:\n  - id: a\n    workstream_id: w\n    description: Write notes.\n`;

describe("a local run whose state ref went back", () => {
  it("takes the merge on its integration branch as done and runs nothing again", async () => {
    const repo = await tempRepo();
    const options = {
      ...scriptedRun(repo, ".workflow/g.yaml", GRAPH, server.url),
      attemptTimeoutMs: WAIT_MS,
    };
    const first = await runLocal(options);
    expect(first.state.tasks.a!.status).toBe("merged");
    const merges = async () =>
      (await git(repo, ["log", "--merges", "--format=%s", "agentrelay/g/w/integration"]))
        .split("\n")
        .filter((s) => s.startsWith("Merge task"));
    expect(await merges()).toEqual(["Merge task a into w"]);
    // The ref moved back to the version in which a was running.
    const ref = stateRef("g/1");
    const versions = (await git(repo, ["rev-list", "--reverse", ref])).split("\n");
    const statusAt = async (v: string) =>
      (JSON.parse(await git(repo, ["show", `${v}:tasks/000.json`])) as { tasks: { a: { status: string } } })
        .tasks.a.status;
    let old = "";
    for (const v of versions) if (!old && (await statusAt(v)) === "running") old = v;
    await git(repo, ["update-ref", ref, old]);
    const lines: string[] = [];
    const again = await runLocal({ ...options, onLog: (_task, line) => lines.push(line) });
    expect(again.state.tasks.a).toMatchObject({ status: "merged", attempt: 1 });
    expect(await merges()).toEqual(["Merge task a into w"]);
    expect(lines.filter((l) => l.includes("had gone back"))).toEqual([
      "the state of run g/1 had gone back (its ref holds an older version than the integration branches' merges): a merged already, so the run takes it as merged instead of running it again",
    ]);
  });
});

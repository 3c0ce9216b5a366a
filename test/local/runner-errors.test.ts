/**
 * The runner's own failure to run an attempt (here its workstream's checkout: a directory in the way
 * that is no worktree) fails that attempt with the reason and says it at once, instead of leaving the
 * task running in a run that ends "not finished" with the cause shown only under --verbose.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runLocal, workRootOf } from "../../src/local/run.ts";
import { scriptedRun } from "../../harness/local-run.ts";
import { startScriptedModel } from "../../src/scripted/model-server.ts";
import { tempRepo } from "../support/git.ts";

const GRAPH = `name: g
max_task_attempts: 1
tasks:
  - id: a
    description: Write a.txt.
`;

describe("an attempt the runner cannot run", () => {
  it("fails with the runner's reason, and the error is said whatever the verbosity", async () => {
    const repo = await tempRepo();
    mkdirSync(join(workRootOf(repo, "g"), "workstreams", "default"), { recursive: true });
    const errors: string[] = [];
    const model = await startScriptedModel(() => ({ text: "Nothing to do." }));
    const { state } = await runLocal({
      ...scriptedRun(repo, ".workflow/g.yaml", GRAPH, model.url),
      onError: (line) => errors.push(line),
    }).finally(() => model.close());
    expect(state.tasks.a!.status).toBe("failed");
    expect(state.outcome).toBe("completed_with_failures");
    expect(JSON.stringify(state.tasks.a)).toMatch(/the runner could not run attempt 1: /);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^error: [^\n]+$/);
  });
});

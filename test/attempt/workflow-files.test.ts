/**
 * On GitHub no token of agentrelay's may push a change to `.github/workflows/`: an attempt whose work
 * changes a workflow file is stopped before its push, with the reason and the way forward, even when
 * the task's tagged_paths allow the edit (which locally, with no such token, is a design concern).
 */
import { afterEach, describe, expect, it } from "vitest";
import { git } from "../../src/attempt/git.ts";
import { runAttempt } from "../../src/attempt/run-attempt.ts";
import { workflowEditFinding } from "../../src/attempt/workflow-files.ts";
import { type ScriptedModelServer, sequence, startScriptedModel } from "../../src/scripted/model-server.ts";
import { attemptSetup } from "../support/attempt.ts";

let model: ScriptedModelServer | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

const graph = `name: g
tasks:
  - id: work
    description: Add a CI workflow.
    tagged_paths: [{ path: .github/workflows, category: ci }]
`;

describe("an attempt that changes a workflow file", () => {
  it("is stopped before the push where the token may not write workflows, with the reason and the way forward", async () => {
    const edit = {
      name: "Bash",
      input: {
        command:
          "mkdir -p .github/workflows && echo 'on: push' > .github/workflows/ci.yml && agentrelay-complete",
        description: "add ci",
      },
    };
    model = await startScriptedModel(sequence([edit], "Done."));
    const ctx = await attemptSetup(graph, "work", model.url);
    const before = await git(ctx.repoDir, ["rev-parse", "HEAD"]);
    const result = await runAttempt({ ...ctx, workflowFilesRefused: true });
    expect(result.outcome).toBe("failed");
    expect(result.reason).toBe(
      `the output checks blocked the push: ${workflowEditFinding([".github/workflows/ci.yml"])}`,
    );
    expect(result.reason).toContain("a person makes that change");
    expect(result.reason).toContain("AGENTRELAY_WORKFLOWS_PERMISSION=write");
    expect(result.commit).toBeNull();
    expect(await git(ctx.repoDir, ["rev-parse", "HEAD"])).toBe(before);
  });

  it("names only workflow files, and nothing for other changes", () => {
    expect(workflowEditFinding(["src/a.ts", ".github/CODEOWNERS"])).toBeNull();
    expect(workflowEditFinding(["src/a.ts", ".github/workflows/release.yml"])).toMatch(
      /^the task changed \.github\/workflows\/release\.yml, and GitHub refuses a push/,
    );
  });
});

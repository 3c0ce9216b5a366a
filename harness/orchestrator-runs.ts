/**
 * GitHub Actions running the orchestrator workflow of workflow-only mode, for the stand-in: each
 * event starts a fresh process of the bundled orchestrator (dist/orchestrate/index.js) with the
 * event's JSON at GITHUB_EVENT_PATH, as a runner would. The job's `if` and its concurrency group are
 * read from the workflow `init --no-app` writes and evaluated with GitHub's expression library; a
 * group runs one run at a time and keeps one pending, and a newer pending run cancels the older one.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { load } from "js-yaml";
import { REPO_ROOT } from "./paths.ts";
import { runnerStep } from "./runner-process.ts";
import { condition, githubContext, interpolate } from "./workflow-expressions.ts";

export const ORCHESTRATOR_WORKFLOW = join(REPO_ROOT, "templates/workflows/no-app/agentrelay.yml");

interface OrchestratorJob {
  if?: string;
  concurrency: { group: string };
}

export interface OrchestratorRun {
  n: number;
  event: string;
  group: string;
  state: "pending" | "running" | "done" | "cancelled" | "skipped";
  /** The process's exit code, and how long it ran. */
  code?: number | null;
  ms?: number;
  log?: string;
}

export class OrchestratorRuns {
  readonly runs: OrchestratorRun[] = [];
  private readonly job: OrchestratorJob;
  private readonly groups = new Map<
    string,
    { running: OrchestratorRun | null; pending: OrchestratorRun | null }
  >();
  private readonly payloads = new Map<number, object>();
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly options: {
      root: string;
      /** The environment every run gets besides the event (GITHUB_API_URL, the token...). */
      env: () => Record<string, string>;
      /** The commit a push names (github.sha). */
      sha: (event: string, payload: object) => string;
    },
  ) {
    const workflow = load(readFileSync(ORCHESTRATOR_WORKFLOW, "utf8")) as {
      jobs: { orchestrate: OrchestratorJob };
    };
    this.job = workflow.jobs.orchestrate;
  }

  /** Runs that are queued or running. */
  get busy(): number {
    return this.runs.filter((r) => r.state === "pending" || r.state === "running").length;
  }

  /** An event for the workflow: skipped by the job's `if`, or queued in its concurrency group. */
  trigger(event: string, payload: object): OrchestratorRun {
    const context = { github: githubContext(event, payload, "octo/demo", this.options.sha(event, payload)) };
    const run: OrchestratorRun = { n: this.runs.length + 1, event, group: "", state: "pending" };
    this.runs.push(run);
    if (!condition(this.job.if, context)) {
      run.state = "skipped";
      return run;
    }
    run.group = interpolate(this.job.concurrency.group, context);
    this.payloads.set(run.n, payload);
    const group = this.groups.get(run.group) ?? { running: null, pending: null };
    this.groups.set(run.group, group);
    if (!group.running) {
      group.running = run;
      void this.start(run, group);
    } else {
      // GitHub keeps one pending run per group: the newer one cancels the older.
      if (group.pending) this.finish(group.pending, "cancelled");
      group.pending = run;
    }
    return run;
  }

  /** Resolves when no run is queued or running. */
  idle(): Promise<void> {
    if (this.busy === 0) return Promise.resolve();
    return new Promise((done) => this.idleWaiters.push(done));
  }

  private finish(run: OrchestratorRun, state: "done" | "cancelled"): void {
    run.state = state;
    this.payloads.delete(run.n);
    if (this.busy === 0) for (const done of this.idleWaiters.splice(0)) done();
  }

  private async start(
    run: OrchestratorRun,
    group: { running: OrchestratorRun | null; pending: OrchestratorRun | null },
  ): Promise<void> {
    run.state = "running";
    const home = join(this.options.root, "orchestrator", String(run.n));
    mkdirSync(home, { recursive: true });
    const eventPath = join(home, "event.json");
    writeFileSync(eventPath, JSON.stringify(this.payloads.get(run.n)));
    const started = performance.now();
    const step = runnerStep("dist/orchestrate/index.js", home, {
      GITHUB_EVENT_NAME: run.event,
      GITHUB_EVENT_PATH: eventPath,
      RUNNER_TEMP: home,
      ...this.options.env(),
    });
    ({ code: run.code, log: run.log } = await step.done);
    run.ms = performance.now() - started;
    const next = group.pending;
    group.running = next;
    group.pending = null;
    this.finish(run, "done");
    if (next) void this.start(next, group);
  }
}

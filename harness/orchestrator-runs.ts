/**
 * GitHub Actions running the orchestrator workflow of workflow-only mode, for the stand-in: each
 * event starts a fresh process of the bundled orchestrator (dist/orchestrate/index.js) with the
 * event's JSON at GITHUB_EVENT_PATH, as a runner would (or, in simulated time, the orchestrator in
 * this process after a runner's pick-up). The workflows are read as installed (the orchestrator's,
 * and the scheduled one for `schedule`): which events they listen to (`on`, with workflow_run's
 * workflows, branches and chain depth: fake-events.ts), the job's `if` and its concurrency group,
 * evaluated with GitHub's expression library; a group runs one run at a time and keeps one pending,
 * and a newer pending run cancels the older one.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { load } from "js-yaml";
import { orchestrate } from "../src/app/workflow.ts";
import { ACTIONS_BOT_LOGIN, workflowRunStarts } from "./fake-events.ts";
import type { FakeGitHub } from "./fake-github.ts";
import { REPO_ROOT } from "./paths.ts";
import { runnerStep } from "./runner-process.ts";
import { condition, githubContext, interpolate } from "./workflow-expressions.ts";

export const ORCHESTRATOR_WORKFLOW = join(REPO_ROOT, "templates/workflows/no-app/agentrelay.yml");
export const SCHEDULE_WORKFLOW = join(REPO_ROOT, "templates/workflows/no-app/agentrelay-schedule.yml");

interface OrchestratorJob {
  if?: string;
  concurrency: { group: string };
}

interface InstalledWorkflow {
  on: Record<string, { workflows?: string[]; branches?: string[] } | null>;
  jobs: { orchestrate: OrchestratorJob };
}

export interface OrchestratorRun {
  n: number;
  event: string;
  group: string;
  state: "pending" | "running" | "done" | "cancelled" | "skipped";
  /** Levels of workflow_run above this run (0: started by another event). */
  depth: number;
  /** The process's exit code, and how long it ran (on the clock it runs on). */
  code?: number | null;
  ms?: number;
  log?: string;
  /** When it was queued and when it started, on that clock. */
  queuedAt?: number;
  startedAt?: number;
}

/** How a run is carried out: the bundled entry in a process (default), or in this process. */
export type Execute = (
  event: string,
  payload: object,
  env: Record<string, string>,
) => Promise<{ code: number | null; log: string }>;

/**
 * Runs carried out by the orchestrator in this process (simulated time): its requests go to the fake
 * `gh`, on its clock.
 */
export const orchestrateInProcess =
  (gh: FakeGitHub): Execute =>
  async (event, payload, env) => {
    const lines: string[] = [];
    const clock = { now: gh.clock.now, sleep: gh.clock.sleep };
    try {
      const { failed } = await orchestrate(env, {
        fetch: gh.fetch,
        // Each run is a fresh process on GitHub: its write budget starts empty (one per clock object).
        clock: { ...clock },
        log: (line) => lines.push(line),
        event: { name: event, payload: payload as Record<string, unknown> },
      });
      return { code: failed.length > 0 ? 1 : 0, log: [...lines, ...failed].join("\n") };
    } catch (error) {
      return { code: 1, log: [...lines, (error as Error).message].join("\n") };
    }
  };

export class OrchestratorRuns {
  readonly runs: OrchestratorRun[] = [];
  private readonly groups = new Map<
    string,
    { running: OrchestratorRun | null; pending: OrchestratorRun | null }
  >();
  private readonly payloads = new Map<number, object>();
  private idleWaiters: (() => void)[] = [];
  /** Runs past their pick-up, being carried out (what real time waits for). */
  executing = 0;
  private processes = 0;

  constructor(
    private readonly options: {
      root: string;
      /** The repository whose workflows these are (`OWNER/NAME`; the graph's, octo/demo, by default). */
      repository?: string;
      /** The environment every run gets besides the event (GITHUB_API_URL, the token...). */
      env: () => Record<string, string>;
      /** The commit a push names (github.sha). */
      sha: (event: string, payload: object) => string;
      /** The installed workflow's text (the orchestrator's, or the schedule's): the templates by default. */
      workflow?: (file: "agentrelay.yml" | "agentrelay-schedule.yml") => string | undefined;
      execute?: Execute;
      /** A runner picking the job up (nothing by default). */
      pickup?: () => Promise<void>;
      /** The clock runs are timed on. */
      now?: () => number;
    },
  ) {}

  private installed(event: string): InstalledWorkflow {
    const file = event === "schedule" ? "agentrelay-schedule.yml" : "agentrelay.yml";
    const text =
      this.options.workflow?.(file) ??
      readFileSync(event === "schedule" ? SCHEDULE_WORKFLOW : ORCHESTRATOR_WORKFLOW, "utf8");
    return load(text) as InstalledWorkflow;
  }

  /** Runs that are queued or running. */
  get busy(): number {
    return this.runs.filter((r) => r.state === "pending" || r.state === "running").length;
  }

  /**
   * An event for the workflow: ignored when the workflow does not listen to it, skipped by the job's
   * `if`, or queued in its concurrency group. `depth`: levels of workflow_run above the event's run.
   */
  trigger(event: string, payload: object, depth = 0): OrchestratorRun | null {
    const workflow = this.installed(event);
    if (!(event in workflow.on)) return null;
    if (event === "workflow_run") {
      const run = (
        payload as {
          workflow_run: { name?: string; head_branch?: string; triggering_actor?: { login?: string } };
        }
      ).workflow_run;
      const starts = workflowRunStarts(workflow.on.workflow_run ?? undefined, {
        workflow: run.name ?? "",
        headBranch: run.head_branch ?? "",
        depth,
        // Who started the completed run, as the payload names it (the workflow's GITHUB_TOKEN: its bot).
        actor: run.triggering_actor?.login === ACTIONS_BOT_LOGIN ? "github_token" : "person",
      });
      if (!starts) return null;
    }
    const job = workflow.jobs.orchestrate;
    const context = {
      github: githubContext(
        event,
        payload,
        this.options.repository ?? "octo/demo",
        this.options.sha(event, payload),
      ),
    };
    const run: OrchestratorRun = {
      n: this.runs.length + 1,
      event,
      group: "",
      state: "pending",
      depth: event === "workflow_run" ? depth + 1 : 0,
      queuedAt: this.now(),
    };
    this.runs.push(run);
    if (!condition(job.if, context)) {
      run.state = "skipped";
      return run;
    }
    run.group = interpolate(job.concurrency.group, context);
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

  /**
   * A workflow_dispatch of `workflow` (`gh workflow run agentrelay.yml`, a task run's hand-over):
   * false when it is not the orchestrator's workflow, or that does not listen to workflow_dispatch.
   */
  dispatched(workflow: string, inputs: Record<string, string>, about: object): boolean {
    if (workflow !== "agentrelay.yml") return false;
    const payload = { inputs, ref: "refs/heads/main", workflow: `.github/workflows/${workflow}`, ...about };
    return this.trigger("workflow_dispatch", payload) !== null;
  }

  private now(): number {
    return (this.options.now ?? (() => performance.now()))();
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
    await this.options.pickup?.();
    this.executing++;
    const payload = this.payloads.get(run.n)!;
    const started = this.now();
    run.startedAt = started;
    try {
      ({ code: run.code, log: run.log } = await (this.options.execute ?? this.process.bind(this))(
        run.event,
        payload,
        this.options.env(),
      ));
    } finally {
      this.executing--;
    }
    run.ms = this.now() - started;
    const next = group.pending;
    group.running = next;
    group.pending = null;
    this.finish(run, "done");
    if (next) void this.start(next, group);
  }

  /** The bundled orchestrator in a fresh process, as a runner starts it. */
  private async process(event: string, payload: object, env: Record<string, string>) {
    const home = join(this.options.root, "orchestrator", String(++this.processes));
    mkdirSync(home, { recursive: true });
    const eventPath = join(home, "event.json");
    writeFileSync(eventPath, JSON.stringify(payload));
    const step = runnerStep("dist/orchestrate/index.js", home, {
      GITHUB_EVENT_NAME: event,
      GITHUB_EVENT_PATH: eventPath,
      RUNNER_TEMP: home,
      ...env,
    });
    return step.done;
  }
}

/**
 * Run state, events (facts) and effects (commands for adapters). All plain serialisable data.
 */
import type { TaskStatus, WorkstreamStatus } from "../plan/readiness.ts";
import type { LandingKind } from "../plan/resolution.ts";
import type { Micros } from "../graph/amount.ts";

export type { LandingKind, TaskStatus, WorkstreamStatus };

export interface PullRequest {
  number: number;
  url: string;
}

export type AttemptOutcome = "succeeded" | "failed" | "timed_out" | "cancelled";

export interface AttemptRecord {
  n: number;
  dispatchedAt: number;
  /** The attempt fails as timed out if it has not reported by then. */
  deadline: number;
  startedAt: number | null;
  /** The job running the attempt (an Actions run id), once it started. */
  job?: string | null;
  outcome: AttemptOutcome | null;
  reason: string | null;
  /** What it spent, in micro-dollars (graph/amount.ts), once it reported. */
  costMicros: Micros | null;
  turns: number | null;
  /** Commit the job pushed to the task branch, when it reported one. */
  pushedSha: string | null;
  /** Completion-gate runs of the attempt, in order. */
  gates: { n: number; passed: boolean }[];
  /** The end of the output of the gate that failed the attempt. */
  gateOutput?: string;
  /** What the attempt may spend (Claude Code's --max-budget-usd); null or absent: no cap. */
  capMicros?: Micros | null;
  /** Which limit set the cap (absent in runs from before it was kept). */
  capBy?: CapScope;
  /**
   * Stopped by a budget other than its own per-attempt limit: given back, it does not count against
   * the task's attempts.
   */
  givenBack?: true;
  /** The part of the cap still held against the budgets while the attempt runs. */
  reservedMicros?: Micros;
}

export interface TaskRun {
  status: TaskStatus;
  /** Number of the latest attempt (0 before the first dispatch). */
  attempt: number;
  /** Attempts used before the latest retry/reset command; the budget counts from here. */
  attemptBase: number;
  attempts: AttemptRecord[];
  /** The task PR (one per task branch, reused across attempts). */
  pr: PullRequest | null;
  /** True when the latest attempt finished without changes (no PR). */
  noPr: boolean;
  /** Why the task failed, was blocked or cancelled. */
  reason: string | null;
  /** Dependencies not yet merged or completed. */
  waitingOn: number;
  concerns: string[];
  opsConcerns: string[];
  summary: string | null;
  outputs: { path: string; action: string; category: string }[];
  mergedAt: number | null;
  /** Added to the task's max_cost_usd by `budget` commands. */
  budgetRaisedMicros?: Micros;
  /** The task PR conflicted with the integration branch: the files, and the resolution attempts so far. */
  conflict?: Conflict;
}

/** A merge that conflicted: the files, the resolution attempts so far, and whether a person has it now. */
export interface Conflict {
  files: string[];
  resolutions: ResolutionRecord[];
  /** Left to a person (resolution off, exhausted or unaffordable): reported once. */
  toPerson?: boolean;
}

/** An agent's attempt at the conflicts between a branch and the branch it merges into. */
export interface ResolutionRecord {
  n: number;
  dispatchedAt: number;
  /** It fails as timed out if it has not reported by then (absent in runs from before deadlines). */
  deadline?: number;
  /** The job running it (an Actions run id), once GitHub named it or the job asked for its token. */
  job?: string | null;
  startedAt?: number | null;
  /** `lost`: its job vanished without a verdict; it does not count against the bound. */
  outcome: "succeeded" | "failed" | "lost" | null;
  reason: string | null;
  costMicros: Micros | null;
  turns: number | null;
  /** What it may spend, where a budget applies, and the part of that still held while it runs. */
  capMicros?: Micros | null;
  reservedMicros?: Micros;
  /** What its agent said it did (a resolution's or a repair's): handed to the tasks downstream. */
  summary?: string | null;
  /** The target commit it merged in, and the branch commit that passed the gates with it. */
  base?: string | null;
  head?: string | null;
  /** The end of the gates' output, when they failed (masked). */
  output?: string | null;
}

/**
 * Before an integration PR merges, its gates run on exactly the tree that will land (the branch with
 * its target merged in); what fails there is repaired by an agent, a bounded number of times.
 */
export interface Verification {
  runs: ResolutionRecord[];
  repairs: ResolutionRecord[];
  /** The target commit and the branch head that passed together: the merge lands only while both hold. */
  passed?: { base: string; head: string } | null;
  /** The failing output the next repair is told (the last failed verification's, repair's or check's). */
  failure?: string | null;
  /** The branch head whose required checks were reported failing (each head is repaired once). */
  checksFailed?: string | null;
  /** Left to a person (repair off, used up, unaffordable, or the target kept moving): reported once. */
  toPerson?: boolean;
}

export type IntegrationState = "none" | "opening" | "open" | "merged" | "skipped" | "closed";

export interface WorkstreamRun {
  status: WorkstreamStatus;
  /** The workstream's integration branch: requested from the adapter, then confirmed. */
  preparation: "none" | "requested" | "done";
  integration: IntegrationState;
  pr: PullRequest | null;
  reason: string | null;
  /** Failed for its own reason (preparation, integration PR), not because a task failed. */
  failedItself: boolean;
  /** Own tasks not yet merged or completed. */
  unfinished: number;
  /** The task holding the workstream (running or PR open), if any. */
  activeTask: string | null;
  autoMergeSkipped: boolean;
  /** The integration PR conflicted with its target: the files, and the resolution attempts so far. */
  conflict?: Conflict;
  /** The gates on the tree that will land, and the repairs of what failed there. */
  verification?: Verification;
  /** The commit its integration PR landed as on its target, when the host said (a dependent in another repository is told). */
  landedCommit?: string;
  /** Its integration PR landed a tree other than the verified one: what a person is told, in one line. */
  landedUnverified?: string;
}

export type Outcome = "succeeded" | "completed_with_failures" | "cancelled";

export interface TimelineEntry {
  at: number;
  type: TimelineType;
  task?: string;
  workstream?: string;
  attempt?: number;
  detail?: string;
}

export type TimelineType =
  | "dispatch"
  | "task_succeeded"
  | "task_failed"
  | "task_merged"
  | "task_blocked"
  | "task_cancelled"
  | "integration_opened"
  | "integration_merged"
  | "integration_skipped"
  | "run_finished"
  | "budget_exhausted"
  | "budget_raised"
  | "conflict"
  | "resolution"
  | "resolution_failed"
  | "verification"
  | "verified"
  | "verification_failed"
  | "repair"
  | "repair_failed";

export interface RunState {
  schemaVersion: 1;
  /** `<graph>/<run number>`, the prefix of every effect key. */
  runKey: string;
  graph: string;
  runNumber: number;
  /** Content hash of the graph definition the run follows. */
  fingerprint: string;
  /** Content hash of each task's definition, to report drift when the graph changes. */
  taskFingerprints: Record<string, string>;
  startedAt: number;
  /** Increments with every change; adapters use it as the compare-and-swap version of the document. */
  seq: number;
  settings: {
    maxConcurrency: number;
    maxTaskAttempts: number;
    attemptTimeoutMs: number;
    failFastOnWorkstreamError: boolean;
  };
  tasks: Record<string, TaskRun>;
  workstreams: Record<string, WorkstreamRun>;
  /** Tasks running or with an open PR (they hold capacity and their workstream). */
  active: number;
  /** Pending tasks whose dependencies are all done, in canonical order. */
  candidates: string[];
  cancelled: boolean;
  outcome: Outcome | null;
  finishedAt: number | null;
  timeline: TimelineEntry[];
  /** Spend against budgets (absent until an attempt has a cap or a cost). */
  budget?: BudgetState;
  /** Ids of the latest commands applied (retry, cancel, reset), so that none is applied twice. */
  appliedCommands?: string[];
}

/** Facts reported by adapters and users. `at` is milliseconds since the epoch (or a simulated clock). */
export type EngineEvent =
  /** The host started the attempt's job and knows which it is (an Actions run id): only it may start the attempt. */
  | { type: "job_dispatched"; task: string; attempt: number; job: string; at: number }
  /** The job began (in GitHub mode: exchanged its OIDC token; `job` is its Actions run id). */
  | { type: "job_started"; task: string; attempt: number; at: number; job?: string }
  | {
      type: "job_succeeded";
      task: string;
      attempt: number;
      at: number;
      /** Finished without changes: completed without a PR. */
      noPr?: boolean;
      concerns?: string[];
      opsConcerns?: string[];
      summary?: string | null;
      outputs?: { path: string; action: string; category: string }[];
      costMicros?: Micros | null;
      turns?: number | null;
    }
  | {
      type: "job_failed";
      task: string;
      attempt: number;
      at: number;
      reason: string;
      /** The job (an Actions run id) the verdict is about: another job's verdict on a bound attempt changes nothing. */
      job?: string;
      kind?: "failed" | "timed_out" | "cancelled";
      /** What the failed attempt spent, as Claude Code reported it. */
      costMicros?: Micros | null;
      turns?: number | null;
      /** The end of the failed gate's output, when a gate failed the attempt. */
      gateOutput?: string;
      /** Stopped because it spent its cap: when a budget is then spent, the task waits, not fails. */
      overBudget?: boolean;
      /** The agent could not work (see protocol/report.ts): the attempt does not count, nor is it retried. */
      agentUnavailable?: boolean;
    }
  | { type: "task_branch_pushed"; task: string; attempt: number; sha: string; at: number }
  | {
      type: "concern_recorded";
      task: string;
      attempt: number;
      kind: "design" | "ops";
      message: string;
      at: number;
    }
  | { type: "gate_result"; task: string; attempt: number; n: number; passed: boolean; at: number }
  /** The attempt's job disappeared without a verdict (the runner was interrupted): run it again, free. */
  | { type: "job_lost"; task: string; attempt: number; reason: string; at: number }
  | { type: "task_pr_opened"; task: string; pr: PullRequest; at: number }
  | { type: "task_pr_merged"; task: string; pr: PullRequest; at: number }
  | { type: "task_pr_closed"; task: string; pr: PullRequest; at: number }
  | { type: "task_merge_failed"; task: string; reason: string; at: number }
  | { type: "workstream_prepared"; workstream: string; at: number }
  | { type: "workstream_prepare_failed"; workstream: string; reason: string; at: number }
  | { type: "integration_pr_opened"; workstream: string; pr: PullRequest; at: number }
  | { type: "integration_skipped"; workstream: string; at: number }
  /** `commit`: what landed on the target (the merge commit), when the host knows it. */
  | {
      type: "integration_pr_merged";
      workstream: string;
      at: number;
      commit?: string;
      /** The PR that landed, when the run did not know it yet (it was opened and merged by a round whose write was lost). */
      pr?: PullRequest;
      /** What landed is not the tree verified (the target moved between the check and the merge): why, in one line. */
      unverified?: string;
    }
  | { type: "integration_pr_closed"; workstream: string; at: number }
  | { type: "integration_failed"; workstream: string; reason: string; at: number }
  | { type: "integration_merge_failed"; workstream: string; reason: string; at: number }
  /** The integration PR cannot merge: its branch and its target change the same lines of `files`. */
  | {
      type: "integration_conflicted";
      workstream: string;
      files: string[];
      /** The merge effect's `resolutions`: a report about a merge before the latest resolution is stale. */
      resolutions?: number;
      at: number;
    }
  /** The task PR cannot merge: the task branch and the integration branch change the same lines. */
  | { type: "task_conflicted"; task: string; files: string[]; resolutions?: number; at: number }
  /**
   * Resolution facts name their subject: a workstream's integration PR, or with `task` that task's PR.
   * `resolution_dispatched`: the host knows the job (an Actions run id); only it may start the attempt.
   */
  | {
      type: "resolution_dispatched";
      workstream: string;
      task?: string;
      kind?: LandingKind;
      n: number;
      job: string;
      at: number;
    }
  /** The resolution's job began (in GitHub mode: took its token). */
  | {
      type: "resolution_started";
      workstream: string;
      task?: string;
      kind?: LandingKind;
      n: number;
      job?: string;
      at: number;
    }
  /** Its job vanished without a verdict (the runner was interrupted): the merge is asked again, free. */
  | {
      type: "resolution_lost";
      workstream: string;
      task?: string;
      kind?: LandingKind;
      n: number;
      reason: string;
      at: number;
    }
  /**
   * A resolution attempt ended: the branch now holds what it merges into (or not, and why). With
   * `kind`, a verification or a repair of the workstream's integration branch ended.
   */
  | {
      type: "resolution_finished";
      workstream: string;
      task?: string;
      kind?: LandingKind;
      n: number;
      ok: boolean;
      reason?: string | null;
      costMicros?: Micros | null;
      turns?: number | null;
      /** The files the merge found conflicting (GitHub's merge answer does not name them). */
      files?: string[];
      /** What the agent said it did. */
      summary?: string | null;
      /** The target commit merged in, and the branch commit that passed the gates with it. */
      base?: string | null;
      head?: string | null;
      /** The end of the failing gates' output. */
      output?: string | null;
      /** Why it failed, told apart (a flaky gate: it passed on a rerun), see protocol/report.ts. */
      verdict?: "break" | "flaky" | "timed_out" | "weakened" | "workflows";
      at: number;
    }
  /** The merge found the target (or the branch) moved since it was verified: it is verified again. */
  | { type: "integration_unverified"; workstream: string; reason: string; at: number }
  /** GitHub refuses the merge: required checks failed on the branch head `head` (their output). */
  | { type: "integration_checks_failed"; workstream: string; head: string; output: string; at: number }
  /** `id` names the request (a comment's command), so that one carried out twice is applied once. */
  | {
      type: "command";
      command: "retry" | "cancel" | "reset";
      task?: string;
      by?: string;
      id?: string;
      at: number;
    }
  /**
   * Raises a budget by `micros`: the run's, or a workstream's or task's (`target`). `id` names the
   * request (a comment), so that one delivered twice raises once.
   */
  | {
      type: "command";
      command: "budget";
      micros: Micros;
      target?: string;
      id: string;
      by?: string;
      at: number;
    }
  | { type: "tick"; at: number };

/**
 * What the engine asks of its host. `repository`: the graph's name for the repository the effect acts
 * in, when its workstream lives in another than the graph's own (graph/repositories.ts); set in one
 * place, RunEdit.emit.
 */
export type EngineEffect = (
  | { type: "prepare_workstream"; key: string; workstream: string }
  /** `capMicros`: what the attempt may spend (Claude Code's --max-budget-usd), when a budget applies. */
  | { type: "dispatch"; key: string; task: string; attempt: number; capMicros?: Micros }
  | { type: "cancel_attempt"; key: string; task: string; attempt: number }
  /** Stops resolution `n`'s job (or verification's, or repair's), if it runs (the run, or its task, was cancelled). */
  | {
      type: "cancel_resolution";
      key: string;
      workstream: string;
      task?: string;
      kind?: LandingKind;
      n: number;
    }
  | { type: "open_task_pr"; key: string; task: string; attempt: number }
  /** `resolutions`: how many resolution attempts came before this merge (echoed by a conflict). */
  | { type: "merge_task_pr"; key: string; task: string; pr: PullRequest; resolutions?: number }
  | { type: "reset_task"; key: string; task: string; pr: PullRequest | null }
  | { type: "open_integration_pr"; key: string; workstream: string }
  /**
   * `resolutions`: how many resolution attempts came before this merge (echoed by a conflict).
   * `verified`: the target commit and branch head that passed the gates together; the merge lands
   * only while the target and the branch are still there (else: integration_unverified).
   */
  | {
      type: "merge_integration_pr";
      key: string;
      workstream: string;
      pr: PullRequest;
      resolutions?: number;
      verified?: { base: string; head: string };
    }
  /**
   * Starts resolution attempt `n`: an agent merges the workstream's target into its integration
   * branch (with `task`: the integration branch into the task branch), resolves `files`, runs the
   * gates and commits the merge (never a rebase).
   */
  | {
      type: "resolve_conflicts";
      key: string;
      workstream: string;
      task?: string;
      n: number;
      files: string[];
      capMicros?: Micros;
    }
  /**
   * Starts verification `n`: the workstream's target is merged into its integration branch (no agent),
   * its gates run on that tree, and the merge commit is pushed when they pass.
   */
  | { type: "verify_integration"; key: string; workstream: string; n: number }
  /**
   * Starts repair attempt `n`: an agent, told what each workstream meant and what failed, fixes the
   * integration branch (its target merged in) until its gates pass, and the fix is committed on it.
   */
  | { type: "repair_integration"; key: string; workstream: string; n: number; capMicros?: Micros }
  | { type: "reply"; key: string; ok: boolean; message: string }
  | { type: "update_status"; key: string }
  | { type: "finish_run"; key: string; outcome: Outcome }
) & { repository?: string };

/** What one scope (the run, a workstream) has spent, holds for running attempts, and was raised by. */
export interface Spend {
  spentMicros: Micros;
  reservedMicros: Micros;
  raisedMicros: Micros;
}

export interface BudgetState {
  run: Spend;
  /** Attempts holding a cap (running). */
  holding: number;
  workstreams: Record<string, Spend>;
  /** Raises applied, by the id of the command that asked (a command delivered twice raises once). */
  raises: string[];
  /** Budgets found spent, by scope (`run`, `workstream:<id>`, `task:<id>`), with what to tell people. */
  spent: Record<string, string>;
  /**
   * What was spent by records a reset or a changed graph dropped: with the records, what `run.spentMicros`
   * must add up to (absent in runs stored before it was kept; engine/budget.ts settleSpend).
   */
  clearedMicros?: Micros;
}

/**
 * What set an attempt's cap: its own per-attempt limit (`max_attempt_cost_usd`), or what is left of the
 * task's budget, or its share of its workstream's or the run's. An attempt stopped by anything but its
 * own limit did not fail at its work: it does not use up one of the task's attempts.
 */
export type CapScope = "attempt" | "task" | "workstream" | "run";

/**
 * What an attempt is given and what it hands back: its inputs (what local mode hands the attempt
 * process as JSON) and context, its result (the report's wire format), and, while it runs, what the
 * runner adds (run-attempt.ts): git through its own git directory, the agent's confinement, masking.
 */
import type { Micros } from "../graph/amount.ts";
import type { Graph, Task } from "../graph/model.ts";
import type { LandedElsewhere } from "../protocol/landed.ts";
import type { InputFile } from "../protocol/render.ts";
import type { AttemptReportResult } from "../protocol/report.ts";
import type { AgentUser } from "./agent-user.ts";
import type { Confinement } from "./bounded.ts";
import type { ClaudeOptions } from "./claude.ts";
import type { ResolverSnapshot } from "./egress/resolver.ts";
import type { EgressMode } from "./egress/egress.ts";
import type { CheckoutGit } from "./git.ts";
import type { ResolutionInputs } from "./resolve.ts";

export interface PeerArtifacts {
  summary: string | null;
  concerns: string[];
  opsConcerns: string[];
  outputs: { path: string; action: string; category: string }[];
}

/** The serialisable part of an attempt: what local mode hands to the attempt process as JSON. */
export interface AttemptInputs {
  /** The graph file's text, given to the agent as `graph.yaml`. */
  graphText: string;
  /** 1-based. */
  attempt: number;
  repoDir: string;
  /**
   * The runner's own git directory for `repoDir`, through which it commits, checks and merges (never
   * the checkout's `.git`, which the agent may rewrite); by default the one git finds before the agent
   * starts. `seal`: make it unwritable for the agent once its own work is set up (see git.ts).
   */
  gitDir?: { path: string; seal: boolean };
  /** What the task branch started from (the integration branch): commits after it are the task's work. */
  baseRef: string;
  workDir: string;
  inputFiles: InputFile[];
  /** What finished tasks handed back, shown to the agent under `tasks/<id>/`. */
  peers: Record<string, PeerArtifacts>;
  /**
   * What agents said when the work of upstream workstreams met other work (resolutions, repairs),
   * shown under `workstreams/<id>/summary.md`.
   */
  landings?: Record<string, string[]>;
  /** What landed in other repositories that the task depends on: `landed.json`. */
  landedElsewhere?: LandedElsewhere[];
  params?: Record<string, unknown>;
  claude: {
    bin: string;
    env: NodeJS.ProcessEnv;
    maxTurns: number;
    timeoutMs: number;
    allowedTools: string[];
  };
  gateTimeoutMs: number;
  /** The `agentrelay` entry the in-job command shims run. */
  signalEntry: string;
  /** Iteration cap of cyberian `loop_until` steps that do not set `max_iterations` (default 10). */
  loopCap?: number;
  /** A Claude session to continue (cyberian's agent_lifecycle `reuse`), instead of starting a new one. */
  resumeSession?: string | null;
  /** What the whole attempt may spend, in micro-dollars (every Claude Code call of it together). */
  capMicros?: Micros | null;
  /** A resolution attempt: `repoDir` has the PR's branch, which takes its target by a merge. */
  resolution?: ResolutionInputs;
  /**
   * Where the egress allowlist is enforced (see egress/egress.ts): local mode and the Action set it;
   * absent, the agent's network is not filtered (a library caller's choice).
   */
  network?: { mode: EgressMode; resolver?: ResolverSnapshot };
  /** How long the model API may stay unreachable before the agent is stopped (default: 10 s). */
  unreachableGraceMs?: number;
  /** How long a request may go without a byte of its answer before it counts as unanswered (default: 90 s). */
  silenceMs?: number;
  /**
   * What a person runs once the cause of a stop that is not the task's (a refused credential, a
   * model API out of reach) is fixed, in the host's words: `run \`agentrelay retry FILE TASK --repo DIR\``.
   */
  retryCommand?: string;
  /** What fixes a credential the model API refuses, in the host's words ("set ANTHROPIC_API_KEY to ..."). */
  fixCredential?: string;
  /** Where the host keeps everything the attempt printed, for a failure that can quote only its end. */
  logFile?: string;
  /**
   * The task branch is pushed with a token GitHub refuses to let change `.github/workflows/` (on
   * GitHub, unless the user gave the job one that holds `workflows`): work that changes a workflow
   * file is stopped before the push (workflow-files.ts).
   */
  workflowFilesRefused?: boolean;
}

export interface AttemptContext extends AttemptInputs {
  graph: Graph;
  task: Task;
  log: (line: string) => void;
  /**
   * The agent's own user (agent-user.ts), where the runner gives it one (the Action, as root): every
   * agent command runs as it, and every process of it ends with each command and with the attempt.
   */
  agentUser?: AgentUser;
}

/** What the attempt reports (the wire format), and the agent's session for a later step that continues it. */
export type AttemptResult = AttemptReportResult & { sessionId: string | null };

/** The result of an attempt that failed before the agent could hand anything back. */
export function failedAttempt(reason: string): AttemptResult {
  return {
    outcome: "failed",
    noPr: false,
    reason,
    concerns: [],
    opsConcerns: [],
    summary: null,
    outputs: [],
    costMicros: 0,
    turns: 0,
    gates: [],
    gateOutput: null,
    overBudget: false,
    conflicted: [],
    commit: null,
    base: null,
    verdict: null,
    sessionId: null,
    agentUnavailable: false,
  };
}

export const DEFAULT_ALLOWED_TOOLS = [
  "Read",
  "Write",
  "Edit",
  "MultiEdit",
  "Glob",
  "Grep",
  "LS",
  "Bash",
  "TodoWrite",
];

/** An attempt while it runs: its log and everything it keeps are masked with `redact`. */
export interface RunningAttempt extends AttemptContext {
  /** Git in the checkout, through the runner's git directory. */
  git: CheckoutGit;
  /**
   * Called once the runner's own work in the checkout is done and before anything of the agent's side
   * runs: the runner's git directory is sealed, and the agent's own user gets the checkout.
   */
  handOver: () => void;
  redact: (text: string) => string;
  /** How every command of the agent's side runs (its network namespace, its own user; see bounded.ts). */
  confine: Confinement;
  /** Stops Claude Code early, with the reason (see claude.ts). */
  stop: NonNullable<ClaudeOptions["stop"]>;
  /** What every model call of the attempt cost so far, as the credential proxy metered it (0: no proxy). */
  metered: () => Micros;
}

/**
 * The internal graph model shared by both dialects. Everything downstream (planning, the engine,
 * the protocol renderers, the app and the runner) reads this model, never the YAML.
 */
import type { AdrVerbosity, Role, TokenTier } from "./schema.ts";
import type { Micros } from "./amount.ts";

export type Dialect = "agentrelay" | "cyberian";

export interface Isolation {
  sandbox: "none" | "oci";
  tokenTier: TokenTier;
  image: string | null;
  runtime: "docker" | "podman" | null;
}

export interface AgentConfig {
  framework: "claude_code";
  /** Model name, or null for Claude Code's default. */
  model: string | null;
  adrVerbosity: AdrVerbosity;
  /** Fully resolved isolation (graph -> workstream -> task -> agent). */
  isolation: Isolation;
}

export interface TaggedPath {
  path: string;
  category: string;
}

export interface InputRef {
  task: string;
  /** Only files declared with this category; null means all. */
  category: string | null;
}

export interface Task {
  id: string;
  role: Role;
  description: string | null;
  dependencies: string[];
  taggedPaths: TaggedPath[];
  completionGate: string | null;
  /** Gate runs allowed per attempt (default 5). */
  maxGateAttempts: number;
  primaryAgent: AgentConfig;
  review: { agent: AgentConfig; reviewOnAttempt: number } | null;
  workstreamId: string;
  inputsFrom: InputRef[];
  /** Budgets in micro-dollars: all of the task's attempts, and each one (null: none of its own). */
  maxCostMicros: Micros | null;
  maxAttemptCostMicros: Micros | null;
  /** Agent attempts at its PR's conflicts with the integration branch (null: the workstream's). */
  maxResolutionAttempts: number | null;
  /** Where the attempt's processes may reach (graph -> workstream -> task, the nearest `allow` wins). */
  network: Network;
  /** Present for tasks compiled from a cyberian workflow. */
  cyberian?: CyberianStep;
}

/**
 * The hosts an attempt may reach besides the model API: names (`registry.npmjs.org`), subdomain
 * patterns (`*.pythonhosted.org`), either with `:port`; `*` alone turns the allowlist off.
 */
export interface Network {
  allow: string[];
}

export interface Workstream {
  id: string;
  parentId: string | null;
  baseBranch: string;
  mergeTargetBranch: string;
  autoMerge: boolean;
  /** What the workstream's tasks may spend together, in micro-dollars (null: no limit of its own). */
  maxCostMicros: Micros | null;
  /** Agent attempts at its integration PR's conflicts (null: the graph's). */
  maxResolutionAttempts: number | null;
  /** What the integration branch must pass as it will land (null: the completion gates of its tasks). */
  integrationGate: string | null;
  /** Verify the tree that will land before the integration PR merges (null: the graph's). */
  verifyIntegration: boolean | null;
  /** Agent attempts at an integration branch that fails its gates as it will land (null: the graph's). */
  maxRepairAttempts: number | null;
  /** The name (under the graph's `repositories`) of the repository it lives in; absent: the graph's own. */
  repository?: string;
}

/** A repository a graph's workstreams live in besides its own: `api: octo/api`. */
export interface Repository {
  /** The graph's short name for it. */
  name: string;
  /** `OWNER/NAME` on GitHub. */
  fullName: string;
}

export interface RunSettings {
  tools: string[];
  anthropicCredential: string | null;
  keepPanes: boolean;
  maxConcurrency: number;
  maxTaskAttempts: number;
  teardownMode: "always" | "never" | "on_success";
  failFastOnWorkstreamError: boolean;
  failFastOnInternalError: boolean;
  /** What the run may spend, and each attempt, in micro-dollars (null: no limit). */
  maxCostMicros: Micros | null;
  maxAttemptCostMicros: Micros | null;
  /** The least an attempt starts with, in micro-dollars (null: four turns of its model; attempt-floor.ts). */
  minAttemptCostMicros: Micros | null;
  /** Agent attempts at a PR's conflicts, per PR (0: none; null: the default, 2). */
  maxResolutionAttempts: number | null;
  /** Verify integration branches as they will land before they merge (null: the default, true). */
  verifyIntegration: boolean | null;
  /** Agent attempts at an integration branch that fails its gates as it will land (null: the default, 2). */
  maxRepairAttempts: number | null;
  /** Verifications of one integration branch while its target keeps moving (null: the default, 3). */
  maxVerifications: number | null;
  /** The whole-tree gate every integration branch passes beside its workstream's own (null: none). */
  integrationGate: string | null;
  /** Where the tests are, files or directories (null: the usual names; attempt/landing-guards.ts). */
  testPaths: string[] | null;
  /** Task agents may not weaken tests they did not write, nor gate scripts or runner configuration. */
  protectTests: boolean | null;
  /** Tasks of different workstreams that may run at once on the same paths: serialised, or (null) warned about. */
  overlaps: "serialize" | null;
  /** The output review before a push (a small model asks whether the diff strays from the task); null: off. */
  outputReview: { model: string | null } | null;
}

export interface Graph {
  name: string;
  dialect: Dialect;
  /** Path of the file the graph came from, as given to the loader. */
  file: string;
  settings: RunSettings;
  maxWorkstreamDepth: number;
  /** Workstreams in declaration order (a synthetic `default` when the file declares none). */
  workstreams: Workstream[];
  /** Tasks in declaration order. */
  tasks: Task[];
  /** The repositories its `repositories` key names, in file order (absent: all in the graph's own). */
  repositories?: Repository[];
  /** Workflow-level data for graphs compiled from cyberian. */
  cyberian?: CyberianWorkflow;
}

export interface CyberianParam {
  name: string;
  range: string;
  required: boolean;
  examples: unknown[];
  /** Where the param is declared, for errors about its value. */
  at: { line: number; column: number };
}

export interface CyberianWorkflow {
  description: string | null;
  params: CyberianParam[];
  agentLifecycle: "reuse" | "refresh";
  /** Root `preconditions.sync_targets`: paths copied from the workflow's directory into the working directory. */
  syncTargets: string[];
}

export interface CyberianStep {
  /** Path of subtask keys from the root (empty for the root task itself). */
  path: string[];
  /** Template sources, rendered with the run's params when the step runs. */
  instructions: string | null;
  systemInstructions: string | null;
  /** `maxIterations` absent means the runner's cap (10 unless configured). */
  loopUntil: { status: string; message: string; maxIterations?: number } | null;
  successCriteria: {
    python: string | null;
    script: string | null;
    maxRetries: number;
    retryMessage: string | null;
  } | null;
  providerCall: {
    provider: string;
    method: string;
    params: Record<string, unknown>;
    outputFile: string | null;
  } | null;
  /** `files_exist` checks to pass before the step runs (its own and those of containers above it). */
  preconditions: { filesExist: { patterns: string[]; minCount: number | null }[] } | null;
}

export const DEFAULT_SETTINGS: RunSettings = {
  tools: [],
  anthropicCredential: null,
  keepPanes: false,
  maxConcurrency: 1,
  maxTaskAttempts: 1,
  teardownMode: "always",
  failFastOnWorkstreamError: false,
  failFastOnInternalError: true,
  maxCostMicros: null,
  maxAttemptCostMicros: null,
  minAttemptCostMicros: null,
  maxResolutionAttempts: null,
  verifyIntegration: null,
  maxRepairAttempts: null,
  maxVerifications: null,
  integrationGate: null,
  testPaths: null,
  protectTests: null,
  overlaps: null,
  outputReview: null,
};

/** Resolution attempts per conflicting PR when the graph does not say. */
export const DEFAULT_RESOLUTION_ATTEMPTS = 2;

/** Repair attempts per integration branch that fails its gates as it will land, when the graph does not say. */
export const DEFAULT_REPAIR_ATTEMPTS = 2;

/** Verifications of one integration branch whose target keeps moving, when the graph does not say. */
export const DEFAULT_VERIFICATIONS = 3;

/** The workstream of a graph that declares none. */
export const defaultWorkstream = (): Workstream => ({
  id: "default",
  parentId: null,
  baseBranch: "main",
  mergeTargetBranch: "main",
  autoMerge: false,
  maxCostMicros: null,
  maxResolutionAttempts: null,
  integrationGate: null,
  verifyIntegration: null,
  maxRepairAttempts: null,
});

/** The empty list tasks share (frozen, so no one appends to it): most tasks have no paths or inputs. */
export const NONE = Object.freeze([]) as unknown as never[];

/** Tasks that name no hosts reach only the model API (frozen and shared, like NONE). */
export const DEFAULT_NETWORK: Network = Object.freeze({ allow: NONE });

/** Frozen: tasks without isolation settings of their own share it (a graph is read-only once loaded). */
export const DEFAULT_ISOLATION: Isolation = Object.freeze({
  sandbox: "none",
  tokenTier: "standard",
  image: null,
  runtime: null,
});

/**
 * "10,000": a number with its thousands grouped, as `toLocaleString("en-US")` writes it, without
 * asking ICU: its first call loads the locale data, which took longer than the rest of `agentrelay
 * validate` together.
 */
export const thousands = (n: number): string =>
  Number.isSafeInteger(n) && !Object.is(n, -0)
    ? String(n).replace(/\B(?=(\d{3})+$)/g, ",")
    : n.toLocaleString("en-US");

/** "1 task", "10,000 tasks": a count with its noun, for whatever people read. */
export const count = (n: number, noun: string, many = `${noun}s`): string =>
  `${thousands(n)} ${n === 1 ? noun : many}`;

/** Branch names are a contract with GitHub and with users' branch protection rules. */
export const taskBranch = (graph: string, task: string): string => `agentrelay/${graph}/${task}`;
export const integrationBranch = (graph: string, workstream: string): string =>
  `agentrelay/${graph}/${workstream}/integration`;

export function taskById(graph: Graph): Map<string, Task> {
  return new Map(graph.tasks.map((t) => [t.id, t]));
}

/** `OWNER/NAME` of a repository the graph names, or null for the graph's own (or a name it lacks). */
export function repositoryFullName(graph: Graph, name: string | null): string | null {
  if (name === null) return null;
  return graph.repositories?.find((r) => r.name === name)?.fullName ?? null;
}

export function workstreamById(graph: Graph): Map<string, Workstream> {
  return new Map(graph.workstreams.map((w) => [w.id, w]));
}

/**
 * What a repository's workflow files say about agentrelay's branches, read as GitHub reads them: on
 * which pull requests a workflow runs (`pull_request`/`pull_request_target` and their `branches` and
 * `branches-ignore` filters: https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-syntax#onpull_requestpull_request_targetbranchesbranches-ignore,
 * patterns as in its "filter pattern cheat sheet"), which check names its jobs report, as GitHub forms
 * them (a job's check run is named by its `name`, else its id; a matrix job's by that and its matrix
 * values, `test (3.12)`, unless its name uses the matrix; a job that calls a reusable workflow by
 * `caller / callee` for each job of the called workflow:
 * https://docs.github.com/en/actions/reference/workflows-and-actions/reusing-workflow-configurations),
 * and which workflows' completions start the orchestrator (`workflow_run.workflows`, names matched as
 * glob patterns).
 */
import { DEFAULT_YAML_LIMITS, loadYaml } from "../graph/yaml.ts";

/**
 * A workflow file is untrusted text: read with the graph's loader, whose aliases expand to at most this
 * many nodes (a 300-byte alias bomb would otherwise expand to billions), then taken as broken.
 */
const WORKFLOW_LIMITS = { ...DEFAULT_YAML_LIMITS, maxExpandedNodes: 100_000 };

export interface WorkflowFile {
  path: string;
  text: string;
}

export interface Workflow {
  path: string;
  /** Its `name:`, else its path (as GitHub names it). */
  name: string;
  on: Record<string, Record<string, unknown>>;
  /**
   * Check names its jobs report: a name, or a pattern where `*` stands for what only a run knows (an
   * expression's value, matrix values, a called workflow's jobs); a name made wholly by an expression
   * is `*`, which matches any.
   */
  checks: string[];
  /** The file could not be read as a workflow. */
  broken?: boolean;
  text: string;
}

/** agentrelay's own workflow files (init writes them). */
export const AGENTRELAY_WORKFLOWS = ["agentrelay.yml", "agentrelay-task.yml", "agentrelay-schedule.yml"].map(
  (f) => `.github/workflows/${f}`,
);

/** A branch name of the shape agentrelay gives integration branches (for filters and rules). */
export const SAMPLE_INTEGRATION_BRANCH = "agentrelay/graph/workstream/integration";

/** GitHub's filter patterns: `*` within a path segment, `**` across, `?` one character, `!` negates. */
function patternRegex(pattern: string): RegExp {
  let out = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "*" && pattern[i + 1] === "*") {
      out += ".*";
      i++;
    } else if (c === "*") out += "[^/]*";
    else if (c === "?") out += ".";
    else out += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${out}$`);
}

/** Whether `value` passes a list of patterns (later ones win; `!` excludes). */
export function matchesFilter(patterns: readonly string[], value: string): boolean {
  let matched = false;
  for (const p of patterns) {
    if (p.startsWith("!")) {
      if (patternRegex(p.slice(1)).test(value)) matched = false;
    } else if (patternRegex(p).test(value)) matched = true;
  }
  return matched;
}

const list = (value: unknown): string[] =>
  Array.isArray(value) ? value.map(String) : typeof value === "string" ? [value] : [];

export function parseWorkflow(file: WorkflowFile): Workflow {
  let doc: Record<string, unknown> | null = null;
  try {
    doc = loadYaml(file.path, file.text, WORKFLOW_LIMITS).value as Record<string, unknown> | null;
  } catch {
    // Reported as broken below.
  }
  if (!doc || typeof doc !== "object")
    return { path: file.path, name: file.path, on: {}, checks: [], broken: true, text: file.text };
  // YAML 1.1 reads a bare `on:` key as true.
  const rawOn = doc.on ?? (doc as Record<string, unknown>).true;
  const on: Record<string, Record<string, unknown>> = {};
  if (typeof rawOn === "string") on[rawOn] = {};
  else if (Array.isArray(rawOn)) for (const e of rawOn) on[String(e)] = {};
  else if (rawOn && typeof rawOn === "object")
    for (const [event, config] of Object.entries(rawOn))
      on[event] = config && typeof config === "object" ? (config as Record<string, unknown>) : {};
  const jobs = (doc.jobs && typeof doc.jobs === "object" ? doc.jobs : {}) as Record<string, Job>;
  const checks = Object.entries(jobs).map(([id, job]) => checkName(id, job));
  return {
    path: file.path,
    name: typeof doc.name === "string" ? doc.name : file.path,
    on,
    checks,
    text: file.text,
  };
}

interface Job {
  name?: unknown;
  strategy?: { matrix?: unknown };
  uses?: unknown;
}

/** The check name (or pattern) a job reports, as GitHub forms it. */
function checkName(id: string, job: Job | null): string {
  if (!job || typeof job !== "object") return id;
  const named = job.name !== undefined ? String(job.name) : id;
  // An expression's value is known only in a run.
  const name = named.replace(/\$\{\{[^}]*\}\}/g, "*");
  // A matrix job whose name does not use the matrix gets its values appended: `test (3.12, ubuntu)`.
  const matrix = job.strategy?.matrix !== undefined && !/\$\{\{[^}]*\bmatrix\b/.test(named);
  const ofMatrix = matrix ? `${name} (*)` : name;
  // A job that calls a reusable workflow reports one check per job of the callee: `caller / callee`.
  return typeof job.uses === "string" ? `${ofMatrix} / *` : ofMatrix;
}

/** A check pattern as a regular expression (`*`: anything). */
const checkRegex = (pattern: string): RegExp =>
  new RegExp(
    `^${pattern
      .split("*")
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*")}$`,
    "s",
  );

/** Whether the workflow runs on pull requests into `base`. */
export function runsOnPullRequestsInto(workflow: Workflow, base: string): boolean {
  return ["pull_request", "pull_request_target"].some((event) => {
    const config = workflow.on[event];
    if (!config) return false;
    if (config.branches !== undefined) return matchesFilter(list(config.branches), base);
    if (config["branches-ignore"] !== undefined) return !matchesFilter(list(config["branches-ignore"]), base);
    return true;
  });
}

/** Whether a workflow reports a check of this name. */
export const reportsCheck = (workflow: Workflow, check: string): boolean =>
  workflow.checks.some((c) => c === check || (c.includes("*") && checkRegex(c).test(check)));

/** The workflows whose completions start the orchestrator (its `workflow_run.workflows`). */
export function orchestratorListens(orchestrator: Workflow): string[] {
  return list(orchestrator.on.workflow_run?.workflows);
}

/** The repository's own workflows (not agentrelay's) that run on PRs into `base`. */
export function ciOn(workflows: readonly Workflow[], base: string): Workflow[] {
  return workflows.filter((w) => !AGENTRELAY_WORKFLOWS.includes(w.path) && runsOnPullRequestsInto(w, base));
}

/**
 * What a resolution attempt works on. Two merges the engine asks for can conflict: a task's PR into
 * its workstream's integration branch (the integration branch moved under it), and a workstream's
 * integration PR into its target (a sibling workstream merged first). Either way an agent merges the
 * branch merged into (`target`) into the PR's own branch (`branch`), with the agent and gates below.
 */
import { integrationBranch, type Task, taskBranch } from "../graph/model.ts";
import type { TokenTier } from "../graph/schema.ts";
import type { Plan } from "./model.ts";

/**
 * A job of a workstream's landing besides a conflict's resolution: a verification (the gates on the
 * tree that will land, no agent) or a repair (an agent fixes what fails there).
 */
export type LandingKind = "verify" | "repair";

/**
 * Whose merge a job works on: a workstream's integration PR, or (with `task`) that task's PR. Without
 * `kind` it resolves conflicts; with it, it verifies or repairs the integration branch as it will land.
 */
export interface ResolutionSubject {
  workstream: string;
  task?: string;
  kind?: LandingKind;
}

/** The subject an effect or a fact names (they carry it in their own fields, among others). */
export const subjectOf = (about: {
  workstream: string;
  task?: string | undefined;
  kind?: LandingKind | undefined;
}): ResolutionSubject => ({
  workstream: about.workstream,
  ...(about.task !== undefined ? { task: about.task } : {}),
  ...(about.kind !== undefined && about.task === undefined ? { kind: about.kind } : {}),
});

export interface Resolver {
  /** The PR's branch, which takes `target` by a merge. */
  branch: string;
  target: string;
  /** The task whose agent (model, token tier) resolves: the task itself, or the workstream's strictest. */
  agentTask: Task;
  /** What the merged result must pass. */
  gates: string[];
  /** Where the tests are that judge it (the graph's `test_paths`; null: the usual names). */
  testPaths: string[] | null;
}

const STRICTNESS: Record<TokenTier, number> = { read_only: 0, standard: 1, elevated: 2 };

export function resolverOf(plan: Plan, subject: ResolutionSubject): Resolver {
  const graph = plan.graph.name;
  const ws = plan.workstreams.get(subject.workstream)!;
  if (subject.task !== undefined) {
    const task = plan.tasks.get(subject.task)!;
    return {
      branch: taskBranch(graph, task.id),
      target: integrationBranch(graph, ws.id),
      agentTask: task,
      gates: task.completionGate ? [task.completionGate] : [],
      testPaths: plan.graph.settings.testPaths,
    };
  }
  const own = plan.tasksByWorkstream.get(ws.id)!.map((id) => plan.tasks.get(id)!);
  // The least trusted of the workstream's agents resolves its branch; among equals, the last task's.
  const agentTask = own.reduce((a, b) =>
    STRICTNESS[b.primaryAgent.isolation.tokenTier] <= STRICTNESS[a.primaryAgent.isolation.tokenTier] ? b : a,
  );
  return {
    branch: integrationBranch(graph, ws.id),
    target: ws.mergeTargetBranch,
    agentTask,
    gates: integrationGates(plan, ws.id),
    testPaths: plan.graph.settings.testPaths,
  };
}

/**
 * What an integration branch must pass as it will land: the workstream's `integration_gate`, else its
 * tasks' gates; and beside them the graph's `integration_gate`, the whole-tree check.
 */
export function integrationGates(plan: Plan, wsId: string): string[] {
  const ws = plan.workstreams.get(wsId)!;
  const own = ws.integrationGate
    ? [ws.integrationGate]
    : plan.tasksByWorkstream.get(wsId)!.flatMap((id) => plan.tasks.get(id)!.completionGate ?? []);
  const whole = plan.graph.settings.integrationGate;
  return whole && !own.includes(whole) ? [...own, whole] : own;
}

/**
 * Whether the workstream is verified by its tasks' gates alone (no `integration_gate` of its own or
 * of the graph): nothing checks the tree as a whole before it lands.
 */
export function unitGatesOnly(plan: Plan, wsId: string): boolean {
  const ws = plan.workstreams.get(wsId)!;
  return (
    !ws.integrationGate && !plan.graph.settings.integrationGate && integrationGates(plan, wsId).length > 0
  );
}

/** How many resolution attempts a conflict of this subject may have. */
export function maxResolutions(plan: Plan, subject: ResolutionSubject, fallback: number): number {
  const task = subject.task !== undefined ? plan.tasks.get(subject.task)!.maxResolutionAttempts : null;
  return (
    task ??
    plan.workstreams.get(subject.workstream)!.maxResolutionAttempts ??
    plan.graph.settings.maxResolutionAttempts ??
    fallback
  );
}

/**
 * Said once where a graph is planned (`agentrelay plan`, the plan comment, the first status, `doctor`):
 * the workstreams whose landings are verified by their tasks' gates alone, with the fix. Null when
 * every verified workstream has a whole-tree gate (its own `integration_gate` or the graph's).
 */
export function unitGatesNote(plan: Plan, limit = 10): string | null {
  const { settings } = plan.graph;
  const ids = plan.graph.workstreams
    .filter((w) => (w.verifyIntegration ?? settings.verifyIntegration ?? true) && unitGatesOnly(plan, w.id))
    .map((w) => w.id);
  if (ids.length === 0) return null;
  const named = ids.slice(0, limit).map((id) => `\`${id}\``);
  if (ids.length > limit) named.push(`${ids.length - limit} more`);
  const all = ids.length === plan.graph.workstreams.length;
  const one = all || ids.length === 1;
  const which = all ? "every workstream" : `workstream${one ? "" : "s"} ${named.join(", ")}`;
  return `${which} ${one ? "is" : "are"} verified before landing by ${one ? "its" : "their"} tasks' gates alone, so a break only a whole-tree check shows can land: add a graph-wide \`integration_gate\` (your end-to-end check), or one per workstream`;
}

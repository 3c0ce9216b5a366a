/**
 * Budgets: what a run, a workstream and a task may spend, in US dollars as Claude Code reports them.
 *
 * Each attempt is dispatched with a cap (Claude Code's `--max-budget-usd`): the least of its task's
 * remaining budget, its workstream's, its share of the run's (the run's remainder divided among the
 * workstreams that may start an agent now, at most the free slots) and the per-attempt limit, never
 * less than the attempt's floor (attempt-floor.ts). The cap is reserved until the attempt ends, then
 * what it really spent is charged, so what is spent never passes a budget by more than the in-flight
 * attempts' own overshoot of their caps. When a budget has less than the floor left, nothing more of
 * it is dispatched: the run waits, saying so, until `budget +USD` raises it. An attempt stopped by a
 * budget other than its own per-attempt limit is given back to its task: the task waits, not fails.
 */
import { AMOUNT_FORM, MAX_RAISED_USD, MAX_USD } from "../graph/amount.ts";
import type { Graph } from "../graph/model.ts";
import { resolverOf } from "../plan/resolution.ts";
import { attemptFloorUsd } from "./attempt-floor.ts";
import type { Step } from "./step.ts";
import type { AttemptRecord, EngineEvent, RunState, TaskRun } from "./types.ts";

/** What one scope (the run, a workstream) has spent, holds for running attempts, and was raised by. */
export interface Spend {
  spentUsd: number;
  reservedUsd: number;
  raisedUsd: number;
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
}

/**
 * Within a running attempt, what is left of its cap below which another agent call is not made (a
 * tenth of a cent). Attempts start with far more: see attempt-floor.ts.
 */
export const MIN_ATTEMPT_USD = 0.001;

/** Amounts are kept to a millionth of a dollar, so that adding and taking back leaves no residue. */
const exact = (amount: number): number => Math.round(amount * 1e6) / 1e6;

/** Rounded down to a millionth (past float noise), so that caps never add up to more than a budget. */
const downToMillionth = (amount: number): number => Math.floor(amount * 1e6 + 1e-6) / 1e6;

const none = (): Spend => ({ spentUsd: 0, reservedUsd: 0, raisedUsd: 0 });

/** The run's budget record, created on first use (runs started before budgets have none). */
export function budgetOf(state: RunState): BudgetState {
  return (state.budget ??= { run: none(), holding: 0, workstreams: {}, raises: [], spent: {} });
}

const workstreamSpend = (budget: BudgetState, ws: string): Spend => (budget.workstreams[ws] ??= none());

/** Dollars as people write them: cents, and tenths of a cent where an amount has them ($0.25, $0.0025, $2,000.00). */
export const usd = (amount: number): string =>
  `$${amount >= 1 ? amount.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 }) : amount.toFixed(4).replace(/(\.\d{2}\d*?)0+$/, "$1")}`;

/** What these attempts (or resolutions) spent. */
export const spentBy = (records: readonly { costUsd: number | null }[]): number =>
  exact(records.reduce((sum, a) => sum + (a.costUsd ?? 0), 0));

/** What a task's attempts spent, and the resolutions of its PR's conflicts. */
export const taskSpent = (t: TaskRun): number => spentBy([...t.attempts, ...(t.conflict?.resolutions ?? [])]);

/**
 * The attempt's cap and which limit set it; or that it waits, for running attempts to give back what
 * they hold; or why it may not start at all (a budget with less than an attempt's floor left).
 */
export type Allowance =
  { capUsd: number | null; capBy?: CapScope } | { waits: true } | { spent: string; scope: string };

/**
 * What set an attempt's cap: its own per-attempt limit (`max_attempt_cost_usd`), or what is left of the
 * task's budget, or its share of its workstream's or the run's. An attempt stopped by anything but its
 * own limit did not fail at its work: it does not use up one of the task's attempts.
 */
export type CapScope = "attempt" | "task" | "workstream" | "run";

export function allowance(step: Step, id: string): Allowance {
  return allowanceIn(step, step.plan.tasks.get(id)!.workstreamId, id);
}

/** The allowance of an attempt in a workstream: a task's (`id`), or one of the workstream's own. */
export function allowanceIn(step: Step, wsId: string, id: string | null): Allowance {
  const { plan, state } = step;
  const task = id === null ? null : plan.tasks.get(id)!;
  const settings = plan.graph.settings;
  const budget = state.budget;
  const limits: {
    scope: string;
    by: CapScope;
    name: string;
    limit: number;
    spent: number;
    held: number;
    share: number;
  }[] = [];
  if (settings.maxCostUsd !== null) {
    const run = budget?.run ?? none();
    const free = contenders(step, state.settings.maxConcurrency - (budget?.holding ?? 0));
    limits.push({
      scope: "run",
      by: "run",
      name: "the run",
      limit: settings.maxCostUsd + run.raisedUsd,
      spent: run.spentUsd,
      held: run.reservedUsd,
      share: free,
    });
  }
  const ws = plan.workstreams.get(wsId)!;
  if (ws.maxCostUsd !== null) {
    const spend = budget?.workstreams[ws.id] ?? none();
    limits.push({
      scope: `workstream:${ws.id}`,
      by: "workstream",
      name: `workstream '${ws.id}'`,
      limit: ws.maxCostUsd + spend.raisedUsd,
      spent: spend.spentUsd,
      held: spend.reservedUsd,
      share: 1,
    });
  }
  if (task && id !== null && task.maxCostUsd !== null) {
    const t = state.tasks[id]!;
    limits.push({
      scope: `task:${id}`,
      by: "task",
      name: `task '${id}'`,
      limit: task.maxCostUsd + (t.budgetRaisedUsd ?? 0),
      spent: taskSpent(t),
      held: 0,
      share: 1,
    });
  }
  const own = task?.maxAttemptCostUsd ?? settings.maxAttemptCostUsd;
  const floor = attemptFloorUsd(plan.graph, task ?? resolverOf(plan, { workstream: wsId }).agentTask);
  let capUsd = own ?? Infinity;
  let capBy: CapScope = "attempt";
  let waits = false;
  for (const { scope, by, name, limit: given, spent, held, share } of limits) {
    const limit = downToMillionth(given); // counted in millionths of a dollar, as spend is
    // Less than an attempt needs is as good as spent: the work waits for a raise.
    if (limit - spent < floor) {
      const left =
        limit - spent > 0 ? `, ${usd(limit - spent)} left, less than an attempt's ${usd(floor)}` : "";
      return { scope, spent: `budget spent: ${usd(spent)} of ${usd(limit)} for ${name}${left}` };
    }
    const left = limit - spent - held;
    if (left < floor) waits = true;
    // The first to start takes at least the floor; the others wait for what it gives back.
    const cap = Math.min(left, Math.max(left / share, floor));
    if (cap < capUsd) [capUsd, capBy] = [cap, by];
  }
  if (waits) return { waits };
  return capUsd === Infinity ? { capUsd: null } : { capUsd: downToMillionth(capUsd), capBy };
}

/**
 * Among how many attempts the run's remainder is shared: the tasks that could start an agent now (one
 * per workstream, not held back by a spent budget of their own), at most the free slots, at least one.
 */
function contenders(step: Step, freeSlots: number): number {
  const spent = step.state.budget?.spent ?? {};
  const workstreams = new Set<string>();
  for (const id of step.state.candidates) {
    if (workstreams.size >= freeSlots) break;
    const ws = step.plan.tasks.get(id)!.workstreamId;
    if (step.workstream(ws).activeTask !== null || spent[`workstream:${ws}`] || spent[`task:${id}`]) continue;
    workstreams.add(ws);
  }
  return Math.max(1, workstreams.size);
}

/** An attempt's record as budgets see it: its cap, and the part of it still held. */
type Held = { capUsd?: number | null; reservedUsd?: number };

/** Holds the attempt's cap against the run's and its workstream's budgets while it runs. */
export function reserve(step: Step, wsId: string, record: Held, capUsd: number | null): void {
  record.capUsd = capUsd;
  if (capUsd === null) return;
  const budget = budgetOf(step.state);
  const ws = workstreamSpend(budget, wsId);
  budget.run.reservedUsd = exact(budget.run.reservedUsd + capUsd);
  ws.reservedUsd = exact(ws.reservedUsd + capUsd);
  budget.holding++;
  record.reservedUsd = capUsd;
}

/** The attempt ended (or was stopped): its cap is no longer held. Safe to call more than once. */
export function unreserve(step: Step, wsId: string, record: Held | undefined): void {
  if (!record?.reservedUsd) return;
  const budget = budgetOf(step.state);
  const ws = workstreamSpend(budget, wsId);
  budget.run.reservedUsd = Math.max(0, exact(budget.run.reservedUsd - record.reservedUsd));
  ws.reservedUsd = Math.max(0, exact(ws.reservedUsd - record.reservedUsd));
  budget.holding = Math.max(0, budget.holding - 1);
  delete record.reservedUsd;
}

/** Records what a workstream's own attempt (a conflict resolution) spent. */
export function chargeWorkstream(step: Step, wsId: string, costUsd: number): void {
  const budget = budgetOf(step.state);
  budget.run.spentUsd = exact(budget.run.spentUsd + costUsd);
  const ws = workstreamSpend(budget, wsId);
  ws.spentUsd = exact(ws.spentUsd + costUsd);
  step.changed = true;
}

/** Records what an attempt spent, once (its first reported cost). */
export function charge(
  step: Step,
  id: string,
  record: AttemptRecord,
  costUsd: number | null | undefined,
): void {
  if (costUsd == null || record.costUsd != null) return;
  record.costUsd = exact(costUsd);
  chargeWorkstream(step, step.plan.tasks.get(id)!.workstreamId, record.costUsd);
}

/** Notes a budget found spent, once until it is raised: the timeline and the status say so. */
export function noteSpent(step: Step, scope: string, message: string, task: string): void {
  const budget = budgetOf(step.state);
  if (budget.spent[scope] === message) return;
  budget.spent[scope] = message;
  const ws = scope.startsWith("workstream:") ? { workstream: scope.slice("workstream:".length) } : {};
  step.log({
    type: "budget_exhausted",
    ...(scope.startsWith("task:") ? { task } : {}),
    ...ws,
    detail: message,
  });
}

/** The reason shown for a task that waits on a budget. */
export const waitsOnBudget = (state: RunState): string[] => Object.values(state.budget?.spent ?? {});

type BudgetCommand = Extract<EngineEvent, { type: "command"; command: "budget" }>;

/**
 * Raises the run's budget, or a workstream's or task's, by the command's amount, once per command id;
 * what waited on it is dispatched by the same step. Answers whether it applied, and what it did (or
 * nothing, for a request already applied).
 */
export function raiseBudget(step: Step, event: BudgetCommand): [boolean, string] | null {
  const { plan, state } = step;
  const { target, usd: amount } = event;
  if (!(amount > 0) || amount > MAX_USD) return [false, `say how much to add: ${AMOUNT_FORM}`];
  if (state.cancelled || state.outcome !== null) return [false, "the run has already finished"];
  if (state.budget?.raises.includes(event.id)) return null; // the same request again: already answered
  const kind =
    target === undefined
      ? "run"
      : plan.workstreams.has(target)
        ? "workstream"
        : plan.tasks.has(target)
          ? "task"
          : null;
  if (kind === null) return [false, `no workstream or task '${target}'`];
  const limit =
    kind === "run"
      ? plan.graph.settings.maxCostUsd
      : kind === "workstream"
        ? plan.workstreams.get(target!)!.maxCostUsd
        : plan.tasks.get(target!)!.maxCostUsd;
  const name = kind === "run" ? "the run" : `${kind} '${target}'`;
  if (limit === null) return [false, `${name} has no budget (max_cost_usd) to raise`];
  const budget = budgetOf(state);
  const raised =
    kind === "run"
      ? budget.run.raisedUsd
      : kind === "workstream"
        ? workstreamSpend(budget, target!).raisedUsd
        : (step.task(target!).budgetRaisedUsd ?? 0);
  if (limit + raised + amount > MAX_RAISED_USD)
    return [false, `${name}'s budget would pass ${usd(MAX_RAISED_USD)}: raise it by less`];
  if (kind === "run") budget.run.raisedUsd = exact(budget.run.raisedUsd + amount);
  else if (kind === "workstream") {
    const ws = workstreamSpend(budget, target!);
    ws.raisedUsd = exact(ws.raisedUsd + amount);
  } else {
    const t = step.task(target!);
    t.budgetRaisedUsd = exact((t.budgetRaisedUsd ?? 0) + amount);
  }
  budget.raises.push(event.id);
  delete budget.spent[kind === "run" ? "run" : `${kind}:${target}`];
  step.log({ type: "budget_raised", detail: `${name} +${usd(amount)}${event.by ? ` by @${event.by}` : ""}` });
  return [true, `raised the budget of ${name} by ${usd(amount)}`];
}

/**
 * One line on what the run spent against its budget, and each workstream with a budget of its own
 * (the first ten: the line stays short at any size).
 */
export function spendLine(state: RunState, graph: Graph): string {
  const budget = state.budget;
  const of = (limit: number | null, raised: number) => (limit === null ? "" : ` of ${usd(limit + raised)}`);
  const budgeted = graph.workstreams.filter((w) => w.maxCostUsd !== null);
  const workstreams = budgeted.slice(0, 10).map((w) => {
    const spend = budget?.workstreams[w.id] ?? none();
    return `${w.id} ${usd(spend.spentUsd)}${of(w.maxCostUsd, spend.raisedUsd)}`;
  });
  if (budgeted.length > 10) workstreams.push(`${budgeted.length - 10} more workstreams`);
  const run = `Spent ${usd(budget?.run.spentUsd ?? 0)}${of(graph.settings.maxCostUsd, budget?.run.raisedUsd ?? 0)}`;
  return workstreams.length ? `${run} (${workstreams.join(", ")})` : run;
}

/** The budgets a graph sets, as one line (null when it sets none); at most `max` workstreams and tasks named. */
export function budgetsText(graph: Graph, max = 20): string | null {
  const parts: string[] = [];
  const { maxCostUsd, maxAttemptCostUsd } = graph.settings;
  if (maxCostUsd !== null) parts.push(`the run ${usd(maxCostUsd)}`);
  if (maxAttemptCostUsd !== null) parts.push(`each attempt ${usd(maxAttemptCostUsd)}`);
  const own = [
    ...graph.workstreams
      .filter((w) => w.maxCostUsd !== null)
      .map((w) => `workstream ${w.id} ${usd(w.maxCostUsd!)}`),
    ...graph.tasks
      .filter((t) => t.maxCostUsd !== null || t.maxAttemptCostUsd !== null)
      .map((t) =>
        [
          `task ${t.id}`,
          t.maxCostUsd !== null ? ` ${usd(t.maxCostUsd)}` : "",
          t.maxAttemptCostUsd !== null ? ` (each attempt ${usd(t.maxAttemptCostUsd)})` : "",
        ].join(""),
      ),
  ];
  parts.push(...own.slice(0, max), ...(own.length > max ? [`and ${own.length - max} more`] : []));
  return parts.length ? `Budgets: ${parts.join(", ")}` : null;
}

/**
 * Budgets: what a run, a workstream and a task may spend, in micro-dollars (graph/amount.ts: integers,
 * so that a sum or a comparison is exact; people read them as dollars).
 *
 * Each attempt is dispatched with a cap (Claude Code's `--max-budget-usd`): the least of its task's
 * remaining budget, its workstream's, its share of the run's (the run's remainder divided among the
 * workstreams that may start an agent now, at most the free slots) and the per-attempt limit, never
 * less than the attempt's floor (graph/attempt-floor.ts). The cap is reserved until the attempt ends,
 * then what it really spent is charged, so what is spent never passes a budget by more than the
 * in-flight attempts' own overshoot of their caps. When a budget has less than the floor left, nothing
 * more of it is dispatched: the run waits, saying so, until `budget +USD` raises it. An attempt stopped
 * by a budget other than its own per-attempt limit is given back to its task: the task waits, not fails.
 */
import { AMOUNT_FORM, MAX_MICROS, MAX_RAISED_MICROS, type Micros, usd } from "../graph/amount.ts";
import { attemptFloorMicros } from "../graph/attempt-floor.ts";
import { type Graph, thousands } from "../graph/model.ts";
import { resolverOf } from "../plan/resolution.ts";
import type { RunEdit } from "./run-edit.ts";
import type { AttemptRecord, BudgetState, CapScope, EngineEvent, RunState, Spend, TaskRun } from "./types.ts";

export { usd };

/**
 * Within a running attempt, what is left of its cap below which another agent call is not made (a
 * tenth of a cent). Attempts start with far more: see graph/attempt-floor.ts.
 */
export const MIN_ATTEMPT_MICROS: Micros = 1_000;

/** An amount the engine adds: a whole number of micro-dollars (a dollar amount here is a bug). */
function whole(micros: number): Micros {
  if (!Number.isSafeInteger(micros) || micros < 0)
    throw new Error(`an amount must be a whole number of micro-dollars, not ${micros}`);
  return micros;
}

const none = (): Spend => ({ spentMicros: 0, reservedMicros: 0, raisedMicros: 0 });

/** Ids in what people read on GitHub are code; the command line passes `(id) => id`. */
const markdownCode = (id: string) => `\`${id}\``;

/** The run's budget record, created on first use (runs started before budgets have none). */
export function budgetOf(state: RunState): BudgetState {
  return (state.budget ??= {
    run: none(),
    holding: 0,
    workstreams: {},
    raises: [],
    spent: {},
    clearedMicros: 0,
  });
}

const workstreamSpend = (budget: BudgetState, ws: string): Spend => (budget.workstreams[ws] ??= none());

/** What these attempts (or resolutions) spent. */
export const spentBy = (records: readonly { costMicros: Micros | null }[]): Micros =>
  records.reduce((sum, a) => sum + (a.costMicros ?? 0), 0);

/** What a task's attempts spent, and the resolutions of its PR's conflicts. */
export const taskSpent = (t: TaskRun): Micros => spentBy([...t.attempts, ...(t.conflict?.resolutions ?? [])]);

/** What the run's records say it spent: its tasks' rows and its integration PRs' resolutions and repairs. */
export function recordedSpend(state: Pick<RunState, "tasks" | "workstreams">): Micros {
  let sum = 0;
  for (const t of Object.values(state.tasks)) sum += taskSpent(t);
  for (const ws of Object.values(state.workstreams))
    sum += spentBy([...(ws.conflict?.resolutions ?? []), ...(ws.verification?.repairs ?? [])]);
  return sum;
}

/**
 * The run's spend as its records say it, whatever its stored total says: the records, and what a reset
 * or a changed graph cleared from them (itself recorded). The stored total is only a cache of that
 * sum, so a state edited by hand is read the same by every host, and as its records say: a stored
 * $1,000,000 over records of $0.006 is read as $0.006, a stored $0.006 under records of $1,000,000 as
 * $1,000,000. A run stored before the cleared amount was kept counts from its records alone (what it
 * cleared, if anything, cannot be told from an edit). Answers the stored total and the corrected one
 * when they disagreed, else null.
 */
export function settleSpend(state: RunState): { stored: Micros; recorded: Micros } | null {
  const recorded = recordedSpend(state);
  if (!state.budget && recorded === 0) return null;
  const budget = budgetOf(state);
  const stored = budget.run.spentMicros;
  const total = recorded + (budget.clearedMicros ??= 0);
  if (total === stored) return null;
  budget.run.spentMicros = total;
  return { stored, recorded: total };
}

/** Notes what dropped records had spent (a reset, a changed graph): the budget keeps it spent. */
export function noteCleared(state: RunState, micros: Micros): void {
  if (micros <= 0) return;
  const budget = budgetOf(state);
  budget.clearedMicros = (budget.clearedMicros ?? 0) + micros;
}

/**
 * The attempt's cap and which limit set it; or that it waits, for running attempts to give back what
 * they hold; or why it may not start at all (a budget with less than an attempt's floor left).
 */
export type Allowance =
  { capMicros: Micros | null; capBy?: CapScope } | { waits: true } | { spent: string; scope: string };

export function allowance(step: RunEdit, id: string): Allowance {
  return allowanceIn(step, step.plan.tasks.get(id)!.workstreamId, id);
}

/** The allowance of an attempt in a workstream: a task's (`id`), or one of the workstream's own. */
export function allowanceIn(step: RunEdit, wsId: string, id: string | null): Allowance {
  const { plan, state } = step;
  const task = id === null ? null : plan.tasks.get(id)!;
  const settings = plan.graph.settings;
  const budget = state.budget;
  const limits: {
    scope: string;
    by: CapScope;
    name: string;
    limit: Micros;
    spent: Micros;
    held: Micros;
    share: number;
  }[] = [];
  if (settings.maxCostMicros !== null) {
    const run = budget?.run ?? none();
    const free = contenders(step, state.settings.maxConcurrency - (budget?.holding ?? 0));
    limits.push({
      scope: "run",
      by: "run",
      name: "the run",
      limit: settings.maxCostMicros + run.raisedMicros,
      spent: run.spentMicros,
      held: run.reservedMicros,
      share: free,
    });
  }
  const ws = plan.workstreams.get(wsId)!;
  if (ws.maxCostMicros !== null) {
    const spend = budget?.workstreams[ws.id] ?? none();
    limits.push({
      scope: `workstream:${ws.id}`,
      by: "workstream",
      name: `workstream '${ws.id}'`,
      limit: ws.maxCostMicros + spend.raisedMicros,
      spent: spend.spentMicros,
      held: spend.reservedMicros,
      share: 1,
    });
  }
  if (task && id !== null && task.maxCostMicros !== null) {
    const t = state.tasks[id]!;
    limits.push({
      scope: `task:${id}`,
      by: "task",
      name: `task '${id}'`,
      limit: task.maxCostMicros + (t.budgetRaisedMicros ?? 0),
      spent: taskSpent(t),
      held: 0,
      share: 1,
    });
  }
  const own = task?.maxAttemptCostMicros ?? settings.maxAttemptCostMicros;
  const floor = attemptFloorMicros(plan.graph, task ?? resolverOf(plan, { workstream: wsId }).agentTask);
  let capMicros: Micros | null = own;
  let capBy: CapScope = "attempt";
  let waits = false;
  for (const { scope, by, name, limit, spent, held, share } of limits) {
    // Less than an attempt needs is as good as spent: the work waits for a raise.
    if (limit - spent < floor) return { scope, spent: spentMessage(name, limit, spent, floor) };
    const left = limit - spent - held;
    if (left < floor) waits = true;
    // The first to start takes at least the floor; the others wait for what it gives back.
    const cap = Math.min(left, Math.max(Math.floor(left / share), floor));
    if (capMicros === null || cap < capMicros) [capMicros, capBy] = [cap, by];
  }
  if (waits) return { waits };
  return capMicros === null ? { capMicros: null } : { capMicros, capBy };
}

/**
 * Why a budget with less than an attempt's floor left holds the work: "budget spent: $3.10 of $3.00
 * for the run", or what is left against the floor. Every amount is rounded as the spend line rounds
 * it (usd), so that the first screen never shows one amount two ways; where what is left would read
 * as the floor ("$0.30 left, less than an attempt's $0.30"), it is said as less than the floor.
 */
function spentMessage(name: string, limit: Micros, spent: Micros, floor: Micros): string {
  if (spent >= limit) return `budget spent: ${usd(spent)} of ${usd(limit)} for ${name}`;
  const rest = usd(limit - spent);
  const left =
    rest === usd(floor)
      ? `less than an attempt's ${usd(floor)} left`
      : `${rest} left, less than an attempt's ${usd(floor)}`;
  return spent === 0
    ? `budget too small: ${usd(limit)} for ${name}, ${left}`
    : `budget nearly spent: ${usd(spent)} of ${usd(limit)} for ${name}, ${left}`;
}

/**
 * Among how many attempts the run's remainder is shared: the tasks that could start an agent now (one
 * per workstream, not held back by a spent budget of their own), at most the free slots, at least one.
 */
function contenders(step: RunEdit, freeSlots: number): number {
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
type Held = { capMicros?: Micros | null; reservedMicros?: Micros };

/** Holds the attempt's cap against the run's and its workstream's budgets while it runs. */
export function reserve(step: RunEdit, wsId: string, record: Held, capMicros: Micros | null): void {
  record.capMicros = capMicros;
  if (capMicros === null) return;
  const budget = budgetOf(step.state);
  const ws = workstreamSpend(budget, wsId);
  budget.run.reservedMicros += whole(capMicros);
  ws.reservedMicros += capMicros;
  budget.holding++;
  record.reservedMicros = capMicros;
}

/** The attempt ended (or was stopped): its cap is no longer held. Safe to call more than once. */
export function unreserve(step: RunEdit, wsId: string, record: Held | undefined): void {
  if (!record?.reservedMicros) return;
  const budget = budgetOf(step.state);
  const ws = workstreamSpend(budget, wsId);
  budget.run.reservedMicros = Math.max(0, budget.run.reservedMicros - record.reservedMicros);
  ws.reservedMicros = Math.max(0, ws.reservedMicros - record.reservedMicros);
  budget.holding = Math.max(0, budget.holding - 1);
  delete record.reservedMicros;
}

/** Records what a workstream's own attempt (a conflict resolution) spent. */
export function chargeWorkstream(step: RunEdit, wsId: string, costMicros: Micros): void {
  const budget = budgetOf(step.state);
  budget.run.spentMicros += whole(costMicros);
  const ws = workstreamSpend(budget, wsId);
  ws.spentMicros += costMicros;
  step.changed = true;
}

/** Records what an attempt spent, once (its first reported cost). */
export function charge(
  step: RunEdit,
  id: string,
  record: AttemptRecord,
  costMicros: Micros | null | undefined,
): void {
  if (costMicros == null || record.costMicros != null) return;
  record.costMicros = whole(costMicros);
  chargeWorkstream(step, step.plan.tasks.get(id)!.workstreamId, record.costMicros);
}

/** Notes a budget found spent, once until it is raised: the timeline and the status say so. */
export function noteSpent(step: RunEdit, scope: string, message: string, task: string): void {
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
export function raiseBudget(step: RunEdit, event: BudgetCommand): [boolean, string] | null {
  const { plan, state } = step;
  const { target, micros: amount } = event;
  if (!Number.isSafeInteger(amount) || amount <= 0 || amount > MAX_MICROS)
    return [false, `say how much to add: ${AMOUNT_FORM}`];
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
      ? plan.graph.settings.maxCostMicros
      : kind === "workstream"
        ? plan.workstreams.get(target!)!.maxCostMicros
        : plan.tasks.get(target!)!.maxCostMicros;
  const name = kind === "run" ? "the run" : `${kind} '${target}'`;
  if (limit === null) return [false, `${name} has no budget (max_cost_usd) to raise`];
  const budget = budgetOf(state);
  const raised =
    kind === "run"
      ? budget.run.raisedMicros
      : kind === "workstream"
        ? workstreamSpend(budget, target!).raisedMicros
        : (step.task(target!).budgetRaisedMicros ?? 0);
  if (limit + raised + amount > MAX_RAISED_MICROS)
    return [false, `${name}'s budget would pass ${usd(MAX_RAISED_MICROS)}: raise it by less`];
  if (kind === "run") budget.run.raisedMicros += amount;
  else if (kind === "workstream") workstreamSpend(budget, target!).raisedMicros += amount;
  else {
    const t = step.task(target!);
    t.budgetRaisedMicros = (t.budgetRaisedMicros ?? 0) + amount;
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
export function spendLine(state: RunState, graph: Graph, quote = markdownCode): string {
  const budget = state.budget;
  const of = (limit: Micros | null, raised: Micros) => (limit === null ? "" : ` of ${usd(limit + raised)}`);
  const budgeted = graph.workstreams.filter((w) => w.maxCostMicros !== null);
  const workstreams = budgeted.slice(0, 10).map((w) => {
    const spend = budget?.workstreams[w.id] ?? none();
    return `${quote(w.id)} ${usd(spend.spentMicros)}${of(w.maxCostMicros, spend.raisedMicros)}`;
  });
  if (budgeted.length > 10) workstreams.push(`${thousands(budgeted.length - 10)} more workstreams`);
  const run = `Spent ${usd(budget?.run.spentMicros ?? 0)}${of(graph.settings.maxCostMicros, budget?.run.raisedMicros ?? 0)}`;
  return workstreams.length ? `${run} (${workstreams.join(", ")})` : run;
}

/** The budgets a graph sets, as one line (null when it sets none); at most `max` workstreams and tasks named. */
export function budgetsText(graph: Graph, max = 20, quote = markdownCode): string | null {
  const parts: string[] = [];
  const { maxCostMicros, maxAttemptCostMicros } = graph.settings;
  if (maxCostMicros !== null) parts.push(`the run ${usd(maxCostMicros)}`);
  if (maxAttemptCostMicros !== null) parts.push(`each attempt ${usd(maxAttemptCostMicros)}`);
  const own = [
    ...graph.workstreams
      .filter((w) => w.maxCostMicros !== null)
      .map((w) => `workstream ${quote(w.id)} ${usd(w.maxCostMicros!)}`),
    ...graph.tasks
      .filter((t) => t.maxCostMicros !== null || t.maxAttemptCostMicros !== null)
      .map((t) =>
        [
          `task ${quote(t.id)}`,
          t.maxCostMicros !== null ? ` ${usd(t.maxCostMicros)}` : "",
          t.maxAttemptCostMicros !== null ? ` (each attempt ${usd(t.maxAttemptCostMicros)})` : "",
        ].join(""),
      ),
  ];
  parts.push(...own.slice(0, max), ...(own.length > max ? [`and ${thousands(own.length - max)} more`] : []));
  return parts.length ? `Budgets: ${parts.join(", ")}` : null;
}

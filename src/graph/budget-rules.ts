/**
 * Budgets that could never pay for an attempt are refused when the graph is validated, at their key:
 * a per-attempt limit (`max_attempt_cost_usd`) or a budget (`max_cost_usd` of the run, a workstream or
 * a task) below the floor of an attempt it pays for (attempt-floor.ts). Such an attempt would never
 * start: the run would wait for a raise before it spent anything (and a raise does not change a
 * per-attempt limit), so the file is fixed first instead.
 */
import { type Micros, usd } from "./amount.ts";
import { attemptFloorMicros, floorSource } from "./attempt-floor.ts";
import type { Graph, Task } from "./model.ts";
import type { IssueList, Where } from "./validate.ts";

/** The task whose attempts need the most, among `tasks`, with its floor. */
function dearest(graph: Graph, tasks: readonly Task[]): { task: Task; floor: Micros } | null {
  let found: { task: Task; floor: Micros } | null = null;
  for (const task of tasks) {
    const floor = attemptFloorMicros(graph, task);
    if (!found || floor > found.floor) found = { task, floor };
  }
  return found;
}

const tooSmall = (graph: Graph, amount: Micros, task: Task, floor: Micros, what: string): string =>
  `${usd(amount)} is less than the floor of an attempt of task '${task.id}', ${usd(floor)} (${floorSource(graph, task)}): ${what}; raise it to at least ${usd(floor)}, or lower the floor with min_attempt_cost_usd`;

export function checkBudgets(graph: Graph, where: Where, issues: IssueList): void {
  const { settings } = graph;
  const taskLimits = graph.tasks.some((t) => t.maxCostMicros !== null || t.maxAttemptCostMicros !== null);
  const workstreamLimits = graph.workstreams.some((w) => w.maxCostMicros !== null);
  if (
    settings.maxCostMicros === null &&
    settings.maxAttemptCostMicros === null &&
    !taskLimits &&
    !workstreamLimits
  )
    return;
  let graphAttemptLimitReported = false;
  graph.tasks.forEach((task, i) => {
    const floor = attemptFloorMicros(graph, task);
    const own = task.maxAttemptCostMicros;
    if (own !== null && own < floor)
      issues.add(
        where.task(i, "max_attempt_cost_usd"),
        tooSmall(graph, own, task, floor, "no attempt of it could start"),
      );
    const inherited = settings.maxAttemptCostMicros;
    if (own === null && inherited !== null && inherited < floor && !graphAttemptLimitReported) {
      graphAttemptLimitReported = true;
      issues.add(
        ["max_attempt_cost_usd"],
        tooSmall(graph, inherited, task, floor, "no attempt of it could start"),
      );
    }
    if (task.maxCostMicros !== null && task.maxCostMicros < floor)
      issues.add(
        where.task(i, "max_cost_usd"),
        tooSmall(graph, task.maxCostMicros, task, floor, "its budget could never start one"),
      );
  });
  graph.workstreams.forEach((ws, i) => {
    if (ws.maxCostMicros === null) return;
    const need = dearest(
      graph,
      graph.tasks.filter((t) => t.workstreamId === ws.id),
    );
    if (need && ws.maxCostMicros < need.floor)
      issues.add(
        where.workstream(i, "max_cost_usd"),
        tooSmall(
          graph,
          ws.maxCostMicros,
          need.task,
          need.floor,
          `workstream '${ws.id}' could never start it`,
        ),
      );
  });
  const need = settings.maxCostMicros === null ? null : dearest(graph, graph.tasks);
  if (need && settings.maxCostMicros! < need.floor)
    issues.add(
      ["max_cost_usd"],
      tooSmall(graph, settings.maxCostMicros!, need.task, need.floor, "the run could never start it"),
    );
}

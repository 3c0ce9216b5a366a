/**
 * From a task PR's last check to the next dispatch, as the benches measure it in simulated time: for
 * each task that depends on another, the time from its dependency's PR settling its checks (its CI
 * finished, or its opening where no CI runs on it) to the task's first dispatch, which that PR's merge
 * made ready.
 */
import type { FakeGitHub } from "./fake-github.ts";
import type { Graph } from "../src/graph/model.ts";
import { taskBranch } from "../src/graph/model.ts";

/** Seconds, one per dependent task whose dependency's PR settled its checks. */
export function checkToDispatch(
  gh: FakeGitHub,
  graph: Graph,
  settled: ReadonlyMap<number, number>,
): number[] {
  const seconds: number[] = [];
  for (const task of graph.tasks) {
    const first = gh.dispatches.find((d) => d.inputs.task === task.id && d.inputs.attempt === "1");
    if (!first) continue;
    const checks = task.dependencies
      .map((dep) => gh.pulls.find((p) => p.head === taskBranch(graph.name, dep) && p.merged))
      .map((pull) => (pull ? settled.get(pull.number) : undefined));
    if (checks.length === 0 || checks.some((at) => at === undefined)) continue;
    seconds.push((first.at - Math.max(...(checks as number[]))) / 1000);
  }
  return seconds;
}

/** The value below which `share` of the values fall (nearest rank). */
export function percentile(values: readonly number[], share: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(share * sorted.length) - 1))]!;
}

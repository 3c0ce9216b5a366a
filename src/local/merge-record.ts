/**
 * What the repository merged of a local run: the record its state is checked against. The state ref
 * can be moved back (`git update-ref`, a restore after damage); the merge commits on the integration
 * branches stay. A task whose merge commit (`Merge task <id> into <workstream>`, made since the run
 * started) is on its integration branch is merged, whatever the state says: the runner takes it as
 * merged when it resumes and before it starts any attempt, and never runs it again.
 */
import { gitRaw } from "../attempt/git.ts";
import type { EngineEvent, RunState } from "../engine/types.ts";
import { integrationBranch, taskBranch } from "../graph/model.ts";
import type { Plan } from "../plan/model.ts";

/** The local "PR" of a task: the branch itself, numbered by the plan, so a repeated open is the same PR. */
export const localTaskPr = (plan: Plan, graph: string, task: string) => ({
  number: plan.rank.get(task)! + 1,
  url: `local:${taskBranch(graph, task)}`,
});

/** Of `tasks`, those merged into their integration branches since the run started. */
export async function mergedLocally(
  /** The clone a workstream lives in. */
  repoOf: (workstream: string) => string,
  plan: Plan,
  state: Pick<RunState, "graph" | "startedAt">,
  tasks: readonly string[],
): Promise<string[]> {
  const byWorkstream = new Map<string, string[]>();
  for (const task of tasks) {
    const ws = plan.tasks.get(task)!.workstreamId;
    byWorkstream.set(ws, [...(byWorkstream.get(ws) ?? []), task]);
  }
  // Git's commit times are in seconds.
  const since = Math.floor(state.startedAt / 1000);
  const merged: string[] = [];
  for (const [ws, wanted] of byWorkstream) {
    const log = await gitRaw(repoOf(ws), [
      "log",
      "--merges",
      "--first-parent",
      `--since=${since - 1}`,
      "--format=%ct %s",
      `refs/heads/${integrationBranch(state.graph, ws)}`,
      "--",
    ]);
    if (log.code !== 0) continue; // no integration branch yet
    const found = new Set<string>();
    for (const line of log.stdout.split("\n")) {
      const m = /^(\d+) Merge task (\S+) into (\S+)$/.exec(line);
      if (m && Number(m[1]) >= since && m[3] === ws) found.add(m[2]!);
    }
    merged.push(...wanted.filter((task) => found.has(task)));
  }
  return merged;
}

/** The facts that take the merged tasks as merged. */
export const adoptionFacts = (plan: Plan, graph: string, tasks: string[], at: number): EngineEvent[] =>
  tasks.map((task) => ({ type: "task_pr_merged", task, pr: localTaskPr(plan, graph, task), at }));

/** One line saying that the state had gone back and what was taken as merged. */
export const wentBack = (runKey: string, tasks: string[]): string =>
  `the state of run ${runKey} had gone back (its ref holds an older version than the integration branches' merges): ${tasks.join(", ")} merged already, so the run takes ${tasks.length > 1 ? "them" : "it"} as merged instead of running ${tasks.length > 1 ? "them" : "it"} again`;

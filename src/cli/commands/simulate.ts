import { simulate, simulationJson, type SimulationResult } from "../../engine/simulate.ts";
import { spendLine } from "../../engine/budget.ts";
import type { Graph } from "../../graph/model.ts";
import { readGraphFile } from "../../graph/read.ts";
import { statusComment } from "../../github/status-comment.ts";
import { checkKnown, type Io, UsageError } from "../io.ts";

export interface SimulateCommandOptions {
  fail: string[];
  concern: string[];
  json: boolean;
  /** Print the run's status comment as it would stand on GitHub at the end of the simulated run. */
  markdown?: boolean;
  /** `--at N`: stop after N events, the run as it stands mid-way (jobs running, PRs open). */
  at?: string | undefined;
  /** What each attempt spends, to see where a budget stops the run. */
  costPerAttempt?: number | undefined;
  /** `WS[:N]`: the first N merges of the workstream's integration PR conflict (1 without N). */
  conflictIntegration?: string[];
  /** `TASK[:N]`: the first N merges of the task's PR conflict (1 without N). */
  conflict?: string[];
}

/**
 * `ID[:N]` options: `--fail TASK[:N]` (the first N attempts fail; every one without N),
 * `--conflict TASK[:N]` and `--conflict-integration WS[:N]` (the first N merges conflict; one without N).
 */
function parseCounts(
  flag: string,
  what: string,
  specs: string[],
  known: Set<string>,
  whenOmitted: number,
): Map<string, number> {
  const counts = new Map<string, number>();
  for (const spec of specs) {
    const match = /^([^:]+)(?::(\d+))?$/.exec(spec);
    if (!match) throw new UsageError(`${flag} expects ${what} or ${what}:N, got '${spec}'`);
    const [, id, count] = match;
    checkKnown(what.toLowerCase(), id!, [...known], `${flag}: `);
    counts.set(id!, count === undefined ? whenOmitted : Number(count));
  }
  return counts;
}

function minutes(ms: number): string {
  const m = Math.round(ms / 60_000);
  return `t+${String(Math.floor(m / 60)).padStart(2, "0")}:${String(m % 60).padStart(2, "0")}`;
}

function timelineText(result: SimulationResult, graph: Graph): string {
  const { state } = result;
  const lines = [`Simulated run of ${state.graph}`, ""];
  for (const e of state.timeline) {
    const subject = [e.task, e.workstream && !e.task ? e.workstream : undefined].filter(Boolean).join("");
    const attempt = e.attempt !== undefined && e.type !== "task_merged" ? ` (attempt ${e.attempt})` : "";
    const detail = e.detail ? (subject ? `: ${e.detail}` : e.detail) : "";
    lines.push(`  ${minutes(e.at)}  ${e.type.padEnd(20)} ${subject}${attempt}${detail}`);
  }
  if (result.reviewerMerged.length > 0) {
    lines.push("", `A simulated reviewer merged the integration PRs of: ${result.reviewerMerged.join(", ")}`);
  }
  lines.push("", "Tasks:");
  for (const [id, t] of Object.entries(state.tasks)) {
    lines.push(
      `  ${id.padEnd(24)} ${t.status.padEnd(10)} attempts ${t.attempt}${t.reason ? `  (${t.reason})` : ""}`,
    );
  }
  lines.push("", "Workstreams:");
  for (const [id, w] of Object.entries(state.workstreams)) lines.push(`  ${id.padEnd(24)} ${w.status}`);
  if (state.budget)
    lines.push(
      "",
      spendLine(state, graph, (id) => id),
    );
  lines.push("", `Outcome: ${result.outcome}`);
  return lines.join("\n");
}

/** When the simulated run's latest event happened (its clock starts at 0). */
const lastEvent = (state: SimulationResult["state"]) => state.timeline.at(-1)?.at ?? 0;

/**
 * `agentrelay simulate FILE [--fail TASK[:N]]... [--concern TASK]... [--conflict TASK[:N]]...
 * [--conflict-integration WS[:N]]...
 * [--cost-per-attempt USD] [--at EVENTS] [--json | --markdown]`.
 */
export async function simulateCommand(
  file: string,
  options: SimulateCommandOptions,
  io: Io,
): Promise<number> {
  const graph = await readGraphFile(file);
  if (options.json && options.markdown) throw new UsageError("--json and --markdown: choose one");
  const known = new Set(graph.tasks.map((t) => t.id));
  for (const task of options.concern) checkKnown("task", task, [...known], "--concern: ");
  const workstreams = new Set(graph.workstreams.map((w) => w.id));
  const at =
    options.at === undefined ? undefined : /^[1-9]\d{0,8}$/.test(options.at) ? Number(options.at) : null;
  if (at === null) throw new UsageError(`--at expects a number of events from 1, got '${options.at}'`);
  const result = simulate(graph, {
    failures: parseCounts("--fail", "TASK", options.fail, known, Number.POSITIVE_INFINITY),
    integrationConflicts: parseCounts(
      "--conflict-integration",
      "WORKSTREAM",
      options.conflictIntegration ?? [],
      workstreams,
      1,
    ),
    taskConflicts: parseCounts("--conflict", "TASK", options.conflict ?? [], known, 1),
    concerns: new Set(options.concern),
    ...(options.costPerAttempt !== undefined ? { costPerAttempt: options.costPerAttempt } : {}),
    ...(at !== undefined ? { maxEvents: at } : {}),
  });
  io.out(
    options.json
      ? JSON.stringify(simulationJson(result))
      : options.markdown
        ? statusComment(result.plan, result.state, lastEvent(result.state) + 60_000)
        : timelineText(result, graph),
  );
  return 0;
}

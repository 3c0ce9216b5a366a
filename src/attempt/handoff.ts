/**
 * What earlier tasks handed to this attempt, read from the run state: input files from `inputs_from`
 * (the declared outputs of upstream tasks) and finished tasks' summaries, concerns and outputs, and
 * what agents said when the work of a workstream this task depends on met other work (a conflict's
 * resolution, a repair of what broke together). Local mode and the GitHub Action build the attempt
 * from the same state this way.
 */
import type { ResolutionRecord, RunState } from "../engine/types.ts";
import type { Plan } from "../plan/model.ts";
import type { Task } from "../graph/model.ts";
import { type LandedElsewhere, landedElsewhere } from "../protocol/landed.ts";
import { type InputFile, resolveInputFiles } from "../protocol/render.ts";
import type { PeerArtifacts } from "./attempt.ts";

export function handoff(
  state: RunState,
  task: Task,
  plan?: Plan,
): {
  inputFiles: InputFile[];
  peers: Record<string, PeerArtifacts>;
  landings: Record<string, string[]>;
  landedElsewhere: LandedElsewhere[];
} {
  const peers = Object.fromEntries(
    Object.entries(state.tasks)
      .filter(([, t]) => t.status === "merged" || t.status === "completed")
      .map(([id, t]) => [
        id,
        { summary: t.summary, concerns: t.concerns, opsConcerns: t.opsConcerns, outputs: t.outputs },
      ]),
  );
  const outputsOf = (id: string) => {
    const t = state.tasks[id];
    return t
      ? {
          schema_version: "1" as const,
          files: t.outputs as { path: string; action: "created"; category: string }[],
        }
      : null;
  };
  return {
    inputFiles: resolveInputFiles(task, outputsOf),
    peers,
    landings: plan ? landingsFor(state, task, plan) : {},
    landedElsewhere: plan ? landedElsewhere(state, task, plan) : [],
  };
}

/**
 * What the agents of resolutions and repairs said, for the workstreams a task depends on: those of its
 * dependencies (its own included) and its workstream's ancestors. Each line names what it was about.
 */
export function landingsFor(state: RunState, task: Task, plan: Plan): Record<string, string[]> {
  const upstream = new Set(task.dependencies.map((d) => plan.tasks.get(d)!.workstreamId));
  for (
    let p = plan.workstreams.get(task.workstreamId)!.parentId;
    p !== null;
    p = plan.workstreams.get(p)!.parentId
  )
    upstream.add(p);
  const said = (records: ResolutionRecord[] | undefined, what: string) =>
    (records ?? []).flatMap((r) =>
      r.outcome === "succeeded" && r.summary ? [`${what} ${r.n}: ${r.summary}`] : [],
    );
  const landings: Record<string, string[]> = {};
  for (const ws of [...upstream].sort()) {
    const w = state.workstreams[ws];
    const lines = [
      ...said(w?.conflict?.resolutions, "Resolution of its integration PR's conflicts"),
      ...said(w?.verification?.repairs, "Repair of its integration branch with its target"),
      ...plan.tasksByWorkstream
        .get(ws)!
        .flatMap((id) => said(state.tasks[id]?.conflict?.resolutions, `Resolution of task ${id}'s PR`)),
    ];
    if (lines.length > 0) landings[ws] = lines;
  }
  return landings;
}

/**
 * What earlier tasks handed to this attempt, read from the run state: input files from `inputs_from`
 * (the declared outputs of upstream tasks) and finished tasks' summaries, concerns and outputs. Local
 * mode and the GitHub Action build the attempt from the same state this way.
 */
import type { RunState } from "../engine/types.ts";
import type { Task } from "../graph/model.ts";
import { type InputFile, resolveInputFiles } from "../protocol/render.ts";
import type { PeerArtifacts } from "./run-attempt.ts";

export function handoff(
  state: RunState,
  task: Task,
): { inputFiles: InputFile[]; peers: Record<string, PeerArtifacts> } {
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
  return { inputFiles: resolveInputFiles(task, outputsOf), peers };
}

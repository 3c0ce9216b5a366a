/**
 * What every host stores of a run, and where: the engine's state with its pinned source. The GitHub
 * app writes it on the graph's state branch; the task Action reads it there at the dispatched version.
 */
import type { RunState } from "../engine/types.ts";
import type { RunSource } from "./run-source.ts";

export type StoredRun = RunState & { source: RunSource };

/** `<graph>/<n>` -> the graph and the run's document on the state branch (`run-<n>.json`). */
export function runDocument(runKey: string): { graph: string; file: string } {
  const slash = runKey.lastIndexOf("/");
  return { graph: runKey.slice(0, slash), file: `run-${runKey.slice(slash + 1)}.json` };
}

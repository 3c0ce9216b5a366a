/**
 * What every host stores of a run, and where: the engine's state with its pinned source. The GitHub
 * app writes it on the graph's state branch; the task Action reads it there at the dispatched version.
 */
import type { RunState } from "../engine/types.ts";
import type { RunSource } from "./run-source.ts";

export type StoredRun = RunState & { source: RunSource };

/**
 * `<graph>/<n>` -> the graph, the run's folder on the state branch (`run-<n>`, see state-layout.ts)
 * and the one document it was stored as before that layout (`run-<n>.json`).
 */
export function runFolder(runKey: string): { graph: string; dir: string; legacy: string } {
  const slash = runKey.lastIndexOf("/");
  const n = runKey.slice(slash + 1);
  return { graph: runKey.slice(0, slash), dir: `run-${n}`, legacy: `run-${n}.json` };
}

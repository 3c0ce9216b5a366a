/**
 * A run as the GitHub adapter stores it: the engine's state, where its graph came from (the pinned
 * source), and the ids of what the app shows people (tracking issue, status comments, check runs).
 */
import type { StoredRun } from "../protocol/stored-run.ts";

export interface GitHubMeta {
  trackingIssue: number | null;
  statusComment: number | null;
  /** When the status comments were last edited (edits are batched). */
  statusAt: number;
  /** The status comment mirrored on each open integration PR. */
  workstreamComments: Record<string, number>;
  /** The check run of each task on the graph's commit. */
  checkRuns: Record<string, number>;
  /**
   * What GitHub makes a task or workstream wait for, by waitKey (effects.ts), in one line; `person`:
   * only a person can end it. Absent in runs from before it was kept.
   */
  waits?: Record<string, { line: string; person: boolean }>;
  /** What `agentrelay doctor` finds in the repository's settings, read when the run started. */
  findings?: string[];
}

export type HostedRun = StoredRun & { github: GitHubMeta };

export const newMeta = (): GitHubMeta => ({
  trackingIssue: null,
  statusComment: null,
  statusAt: 0,
  workstreamComments: {},
  checkRuns: {},
});

/**
 * A stored run as this version reads it. Documents written before workstreams were called so
 * everywhere kept the mirrored status comments under `laneComments`.
 */
export function hostedRunOf(
  stored: StoredRun & { github: GitHubMeta & { laneComments?: Record<string, number> } },
): HostedRun {
  const meta = stored.github;
  if (meta.laneComments) {
    meta.workstreamComments = { ...meta.laneComments, ...meta.workstreamComments };
    delete meta.laneComments;
  }
  return stored;
}

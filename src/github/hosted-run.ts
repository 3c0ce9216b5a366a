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
  laneComments: Record<string, number>;
  /** The check run of each task on the graph's commit. */
  checkRuns: Record<string, number>;
}

export type HostedRun = StoredRun & { github: GitHubMeta };

export const newMeta = (): GitHubMeta => ({
  trackingIssue: null,
  statusComment: null,
  statusAt: 0,
  laneComments: {},
  checkRuns: {},
});

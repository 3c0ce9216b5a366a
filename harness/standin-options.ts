/** What a test asks of the stand-in (standin.ts): its app, its jobs, its faults, its clock. */
import type { Script } from "../src/scripted/model-server.ts";
import type { TokenKind } from "./fake-repo-settings.ts";
import type { CiOptions } from "./standin-ci.ts";
import type { JobOptions } from "./standin-jobs.ts";
import type { Delivery } from "./standin-replicas.ts";

export interface StandinOptions extends JobOptions {
  script: Script;
  /** App servers (replicas) sharing nothing but GitHub. */
  replicas?: number;
  /** What happens to each webhook: deliver it, drop it, or deliver it twice. */
  route?: (delivery: Delivery) => "deliver" | "drop" | "duplicate";
  /** Every webhook goes to every replica (both handle the same delivery). */
  broadcast?: boolean;
  /** Milliseconds to hold a delivery back (reordering). */
  delay?: (delivery: Delivery) => number;
  /** Fails a GitHub API call on purpose: a reply, or null to let it through. */
  fault?: (call: { method: string; path: string; body: unknown }) => [number, unknown?] | null;
  /** Who orchestrates: the app's replicas (webhooks), or the orchestrator workflow (`init --no-app`). */
  orchestrator?: "app" | "workflow";
  /** Task jobs: the bundled Action with the real CLI (default), or scripted in process (large graphs). */
  jobs?: "action" | "scripted";
  /**
   * Simulated time (timeline.ts), for scripted jobs in workflow-only mode: a runner picks each job up
   * after `pickupMs`, a task's job takes `jobMs`, and the orchestrator runs in this process.
   */
  simulated?: { jobMs?: number; pickupMs?: number };
  /** The repository's CI: a workflow that runs on pull requests and reports one check. */
  ci?: CiOptions;
  /** Workflow-only mode: whose token the orchestrator holds (default: the workflow's GITHUB_TOKEN). */
  token?: TokenKind;
  /** The repository in memory instead of a bare git repository (scripted jobs only). */
  memory?: boolean;
  /**
   * Repositories besides the graph's (octo/demo), for graphs that span repositories: each on the app's
   * installation `installation` (42 is the graph's), or on none (null: the app is not installed there).
   */
  repositories?: { fullName: string; installation: number | null }[];
  /** The schedule as GitHub runs it: late by `lateMs`, and run `n` dropped when `drop(n)`. */
  schedule?: { lateMs?: number; drop?: (n: number) => boolean };
}

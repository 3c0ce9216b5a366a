/**
 * Where a run's graph comes from, pinned when the run starts (path, commit and the text itself, so
 * every handler and every job reads the same definition), and the files beside it: a cyberian
 * workflow's `<name>.params.yaml`.
 */
import { GraphError } from "../graph/errors.ts";
import { parseGraph } from "../graph/load.ts";
import type { Graph } from "../graph/model.ts";
import { missingParams } from "./cyberian-prompt.ts";

export interface RunSource {
  path: string;
  commit: string;
  /** The default branch the graph was pushed to: the task workflow must run from it. */
  branch: string;
  text: string;
  /** Values for a cyberian workflow's params. */
  params?: Record<string, unknown>;
}

/**
 * Parses a graph and checks a cyberian workflow's required params (a missing one names the param).
 * A run's graph may span repositories: where a run starts (a push, a command, the plan check),
 * requireOneRepository says whether it may in this mode.
 */
export function parseRunGraph(source: Pick<RunSource, "path" | "text" | "params">): Graph {
  const graph = parseGraph(source.path, source.text);
  requireParams(graph, source);
  return graph;
}

/**
 * A graph's workstreams may live in other repositories when the orchestrator acts with an app's token
 * (`app`: the hosted app, or the orchestrator workflow with a registered app's token): access.ts
 * checked that the token reaches each one, and each effect and task job acts in its workstream's
 * repository. The workflow's GITHUB_TOKEN alone (`github_token`) reaches the graph's repository only
 * ("The token's permissions are limited to the repository that contains your workflow":
 * https://docs.github.com/actions/security-guides/automatic-token-authentication): such a graph is
 * refused where a run would start (push.ts, plan.ts) at its `repositories` key, with the fix.
 */
export function requireOneRepository(
  graph: Graph,
  source: Pick<RunSource, "path" | "text">,
  credentials: "app" | "github_token",
): void {
  if (!graph.repositories?.length || credentials === "app") return;
  const line = source.text.split("\n").findIndex((l) => /^repositories\s*:/.test(l)) + 1;
  throw new GraphError([
    {
      file: source.path,
      line: Math.max(line, 1),
      column: 1,
      path: "repositories",
      message: `graphs that span repositories (${graph.repositories.map((r) => r.fullName).join(", ")}) need a token that reaches each, and the workflow's GITHUB_TOKEN reaches this repository only: give the orchestrator workflow a registered GitHub App's token (the variable AGENTRELAY_APP_CLIENT_ID, the secret AGENTRELAY_APP_PRIVATE_KEY and AGENTRELAY_REPOSITORIES, in each repository: docs/github.md), use the agentrelay app, or run it locally (agentrelay run ${source.path} --repo DIR --repo NAME=PATH)`,
    },
  ]);
}

/** Fails, naming each one, when a cyberian workflow's required params have no value. */
export function requireParams(graph: Graph, source: Pick<RunSource, "path" | "params">): void {
  const missing = graph.cyberian ? missingParams(graph, source.params ?? {}) : [];
  if (missing.length > 0) {
    throw new GraphError(
      missing.map((name) => ({
        file: source.path,
        line: 1,
        column: 1,
        path: `params.${name}`,
        message: `required param '${name}' has no value (give it in ${paramsFileOf(source.path)} or with /agentrelay run ${source.path} ${name}=...)`,
      })),
    );
  }
}

/** `.workflow/x.yaml` -> `.workflow/x.params.yaml`: values for a cyberian workflow's params. */
export function paramsFileOf(path: string): string {
  return path.replace(/\.ya?ml$/i, "") + ".params.yaml";
}

export const isGraphPath = (path: string): boolean =>
  /^\.workflow\/[^/]+\.ya?ml$/.test(path) && !/\.params\.ya?ml$/.test(path);

/** The graph a changed file belongs to: a graph file itself, or the graph of a params file; else null. */
export function graphPathOf(path: string): string | null {
  if (isGraphPath(path)) return path;
  return /^\.workflow\/[^/]+\.params\.ya?ml$/.test(path) ? path.replace(/\.params(\.ya?ml)$/, "$1") : null;
}

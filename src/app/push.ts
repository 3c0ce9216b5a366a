/**
 * Run on the default branch: a push that adds or changes a graph file (or its params file) starts
 * the graph's run, or resumes it with drift reported. Files are read at the pushed commit. An invalid
 * graph gets a failed check run with annotations and nothing else happens.
 */
import type { Context } from "probot";
import { GraphError } from "../graph/errors.ts";
import { parseGraph } from "../graph/load.ts";
import { credentialsOf, requireReach, requireWriters, type Starter } from "../github/access.ts";
import { readFileAt, type RepoContext } from "../github/client.ts";
import { RunDriver } from "../github/driver.ts";
import { graphPathOf, requireOneRepository, requireParams, type RunSource } from "../protocol/run-source.ts";
import { annotations, cut, unannotated } from "../github/render.ts";
import { readParams } from "./context.ts";
import { answerBeforeLongWork } from "./ingress.ts";

/** A graph this long (a 20,000-task graph of short lines is about 600,000) is answered before it is read. */
const LARGE_GRAPH_CHARS = 1_000_000;

export async function runOnPush(ctx: RepoContext, payload: Context<"push">["payload"]): Promise<void> {
  if (payload.ref !== `refs/heads/${ctx.defaultBranch}` || payload.deleted) return;
  const touched = new Set<string>();
  for (const commit of payload.commits) {
    for (const path of [...(commit.added ?? []), ...(commit.modified ?? [])]) {
      const graph = graphPathOf(path);
      if (graph) touched.add(graph);
    }
  }
  // The sender is who pushed, as GitHub knows them; `pusher` is only the name and email git was given.
  const { sender } = payload;
  const starter = sender ? { login: sender.login, type: sender.type } : null;
  for (const path of [...touched].sort()) await startGraph(ctx, path, payload.after, {}, starter);
}

/**
 * Reads the graph at `commit`, validates it and starts or resumes its run; invalid: a failed check run.
 * `starter`: who asked (the push's or the command's sender), null when nobody is known (the reconciler
 * carrying out a push whose webhook was lost); `instead`: what someone allowed would do instead.
 */
export async function startGraph(
  ctx: RepoContext,
  path: string,
  commit: string,
  extraParams: Record<string, unknown>,
  starter: Starter | null,
  instead?: string,
): Promise<{ runKey: string; started: boolean; drift: string[] } | { issues: string }> {
  const text = await readFileAt(ctx, path, commit);
  if (text === null) return { issues: `${path} does not exist at ${commit}` };
  const source: RunSource = { path, commit, branch: ctx.defaultBranch, text };
  // A large graph holds the process for seconds: its push is answered first, and worked after.
  if (text.length > LARGE_GRAPH_CHARS) await answerBeforeLongWork();
  try {
    const graph = parseGraph(path, text);
    // Only cyberian workflows take params: an agentrelay graph is not asked for a params file.
    const params = {
      ...(graph.cyberian ? await readParams(ctx, path, commit) : {}),
      ...extraParams,
    };
    if (Object.keys(params).length > 0) source.params = params;
    requireParams(graph, source);
    // Every repository the graph names must be reachable before anything is written.
    const own = `${ctx.owner}/${ctx.repo}`;
    await requireReach(ctx.octokit, graph, source, own, credentialsOf(ctx.config), ctx.config.taskWorkflow);
    // ...and whoever asked must be allowed to write where the run will write.
    await requireWriters(ctx.octokit, graph, source, own, starter, ctx.config.allowedBots, instead);
    requireOneRepository(
      graph,
      source,
      credentialsOf(ctx.config) === "github_token" ? "github_token" : "app",
    );
    const result = await new RunDriver(ctx).startOrResume(source, graph);
    ctx.log(
      `${path}: run ${result.runKey} ${result.started ? "started" : "resumed"}${result.drift.length ? ` (${result.drift.join("; ")})` : ""}`,
    );
    return result;
  } catch (error) {
    if (!(error instanceof GraphError)) throw error;
    await ctx.octokit.rest.checks.create({
      owner: ctx.owner,
      repo: ctx.repo,
      name: `agentrelay / ${path}`,
      head_sha: commit,
      status: "completed",
      conclusion: "failure",
      output: {
        title: `${error.issues.length} problem${error.issues.length > 1 ? "s" : ""} in ${path}: nothing was started`,
        summary: [unannotated(error.issues), cut(error.message, 60_000)].filter(Boolean).join("\n\n"),
        annotations: annotations(error.issues),
      },
    });
    return { issues: error.message };
  }
}

/**
 * What GitHub merged of a run: the record a run checks its state against. The state branch can be
 * forced back to an older version (by hand, by a restore after damage); the merges on the
 * integration branches cannot. A task whose PR GitHub merged into its integration branch since the
 * run started is merged, whatever the state says: before any dispatch the driver asks GitHub about
 * the tasks it is about to start, and the reconciler about those the state has failed, cancelled or
 * running; what GitHub merged is taken as merged (`task_pr_merged`), never done again, and said once
 * on the run's issue. Reads only, one GraphQL query for up to 50 tasks.
 * https://docs.github.com/en/graphql/reference/objects#repository (pullRequests: headRefName,
 * baseRefName, states, orderBy).
 */
import type { EngineEvent, PullRequest } from "../engine/types.ts";
import { integrationBranch, taskBranch } from "../graph/model.ts";
import type { Plan } from "../plan/model.ts";
import type { RepoContext } from "./client.ts";
import type { HostedRun } from "./hosted-run.ts";
import { stateBranch } from "./state-store.ts";
import { priority, unlessDeferred } from "./write-pacing.ts";

/** Branch pairs asked about in one query (each a connection of one node: far below GitHub's node limit). */
const PER_QUERY = 50;

interface Merged {
  repository: Record<string, { nodes: { number: number; url: string; mergedAt: string | null }[] } | null>;
}

/** The newest PR from `head` into `base` of each pair that GitHub merged at or after `since`. */
async function mergedPrs(
  ctx: RepoContext,
  pairs: readonly { head: string; base: string }[],
  since: number,
): Promise<(PullRequest | null)[]> {
  const found: (PullRequest | null)[] = [];
  for (let from = 0; from < pairs.length; from += PER_QUERY) {
    const chunk = pairs.slice(from, from + PER_QUERY);
    const variables: Record<string, string> = { owner: ctx.owner, name: ctx.repo };
    const fields = chunk.map(({ head, base }, i) => {
      variables[`head${i}`] = head;
      variables[`base${i}`] = base;
      return `p${i}: pullRequests(headRefName: $head${i}, baseRefName: $base${i}, states: MERGED, first: 1, orderBy: {field: CREATED_AT, direction: DESC}) { nodes { number url mergedAt } }`;
    });
    const declared = chunk.map((_, i) => `$head${i}: String!, $base${i}: String!`).join(", ");
    const query = `query($owner: String!, $name: String!, ${declared}) {
  repository(owner: $owner, name: $name) {
    ${fields.join("\n    ")}
  }
}`;
    const data = await ctx.octokit.graphql<Merged>(query, variables);
    chunk.forEach((_, i) => {
      const pr = data.repository[`p${i}`]?.nodes[0];
      // A PR of the graph's earlier run merged the same branches before this run started: not this run's.
      found.push(
        pr?.mergedAt && Date.parse(pr.mergedAt) >= since ? { number: pr.number, url: pr.url } : null,
      );
    });
  }
  return found;
}

/** What GitHub merged of a run that its state does not say: task PRs, and their workstreams' integration PRs. */
export interface MergeRecord {
  tasks: Map<string, PullRequest>;
  workstreams: string[];
}

/**
 * Of `tasks`, those whose PR GitHub merged into their integration branch since the run started; when
 * there are any (the state went back), also the integration PRs of their workstreams GitHub merged,
 * which the state does not say merged either.
 */
export async function mergeRecord(
  ctx: RepoContext,
  run: HostedRun,
  plan: Plan,
  tasks: readonly string[],
): Promise<MergeRecord> {
  const merged = await mergedPrs(
    ctx,
    tasks.map((task) => ({
      head: taskBranch(run.graph, task),
      base: integrationBranch(run.graph, plan.tasks.get(task)!.workstreamId),
    })),
    run.startedAt,
  );
  const found = new Map<string, PullRequest>();
  tasks.forEach((task, i) => merged[i] && found.set(task, merged[i]));
  if (found.size === 0) return { tasks: found, workstreams: [] };
  const workstreams = [
    ...new Set([...found.keys()].map((task) => plan.tasks.get(task)!.workstreamId)),
  ].filter((ws) => run.workstreams[ws]?.integration !== "merged");
  const integrated = await mergedPrs(
    ctx,
    workstreams.map((ws) => ({
      head: integrationBranch(run.graph, ws),
      base: plan.workstreams.get(ws)!.mergeTargetBranch,
    })),
    run.startedAt,
  );
  return { tasks: found, workstreams: workstreams.filter((_, i) => integrated[i]) };
}

/**
 * The facts that take what GitHub merged as merged: the integration merges first, so that taking a
 * workstream's last task as merged does not open its integration PR again.
 */
export const adoptionFacts = (record: MergeRecord, at: number): EngineEvent[] => [
  ...record.workstreams.map((workstream): EngineEvent => ({ type: "integration_pr_merged", workstream, at })),
  ...[...record.tasks].map(([task, pr]): EngineEvent => ({ type: "task_pr_merged", task, pr, at })),
];

/** Says, in the log and on the run's issue, that the state had gone back and what was taken up. */
export async function sayWentBack(ctx: RepoContext, run: HostedRun, record: MergeRecord): Promise<void> {
  const merged = record.tasks;
  const tasks = [...merged].map(([task, pr]) => `\`${task}\` (#${pr.number})`).join(", ");
  const line = `the state of run \`${run.runKey}\` had gone back (the branch ${stateBranch(run.graph)} holds an older version than GitHub's merges): ${tasks} merged already, so the run takes ${merged.size > 1 ? "them" : "it"} as merged instead of running ${merged.size > 1 ? "them" : "it"} again. What ${merged.size > 1 ? "they" : "it"} spent is not in the restored state.`;
  ctx.log(line);
  const issue = run.github.trackingIssue;
  if (issue === null) return;
  await unlessDeferred(() =>
    ctx.octokit.rest.issues.createComment({
      owner: ctx.owner,
      repo: ctx.repo,
      issue_number: issue,
      body: `**agentrelay**: ${line}`,
      ...priority("status"),
    }),
  );
}

/**
 * Plan on pull request: a PR that adds or changes graph files gets a check run `agentrelay / plan`
 * (errors as annotations at file and line) and one sticky comment with the plan, found again by a
 * hidden marker and edited in place. Nothing runs from a PR.
 */
import type { Context } from "probot";
import { GraphError, printable } from "../graph/errors.ts";
import { buildPlan } from "../plan/plan.ts";
import { credentialsOf, requireReach, requireWriters } from "../github/access.ts";
import { readFileAt, type RepoContext, statusOf } from "../github/client.ts";
import { parseGraph } from "../graph/load.ts";
import { isGraphPath, requireOneRepository, requireParams } from "../protocol/run-source.ts";
import { annotations, PLAN_MARKER, planSummary, takeLines, unannotated } from "../github/render.ts";
import { readParams } from "./context.ts";

export async function planPullRequest(
  ctx: RepoContext,
  payload: Context<"pull_request">["payload"],
): Promise<void> {
  const pr = payload.pull_request;
  const repo = { owner: ctx.owner, repo: ctx.repo };
  const files = await ctx.octokit
    .paginate(ctx.octokit.rest.pulls.listFiles, { ...repo, pull_number: pr.number, per_page: 100 })
    .catch((error: unknown) => {
      // The PR is gone or out of the installation's reach (a redelivered event, a moved repository).
      if (statusOf(error) === 404) return [];
      throw error;
    });
  const graphs = files
    .filter((f) => f.status !== "removed" && isGraphPath(f.filename))
    .map((f) => f.filename);
  if (graphs.length === 0) return;

  const sections: string[] = [];
  const issues = [];
  for (const path of graphs) {
    const text = (await readFileAt(ctx, path, pr.head.sha)) ?? "";
    try {
      const params = await readParams(ctx, path, pr.head.sha);
      const graph = parseGraph(path, text);
      requireParams(graph, { path, params });
      // The repositories it names are checked as a push would check them, before it is merged.
      const own = `${ctx.owner}/${ctx.repo}`;
      const { taskWorkflow } = ctx.config;
      await requireReach(ctx.octokit, graph, { path, text }, own, credentialsOf(ctx.config), taskWorkflow);
      // Whoever opened or updated the PR is told now if they may not write where the run would; the
      // push that merges it is checked again, for whoever merges.
      const by = payload.sender ? { login: payload.sender.login, type: payload.sender.type } : null;
      await requireWriters(ctx.octokit, graph, { path, text }, own, by, ctx.config.allowedBots);
      requireOneRepository(
        graph,
        { path, text },
        credentialsOf(ctx.config) === "github_token" ? "github_token" : "app",
      );
      const plan = buildPlan(graph);
      sections.push(`#### \`${path}\`\n\n${planSummary(plan, Math.floor(60_000 / graphs.length))}`);
    } catch (error) {
      if (!(error instanceof GraphError)) throw error;
      issues.push(...error.issues);
      const problems = error.issues.map(
        (i) => `- line ${i.line}: ${i.path ? `\`${printable(i.path)}\`: ` : ""}${printable(i.message)}`,
      );
      const shown = takeLines(problems, Math.floor(60_000 / graphs.length), (n) => `- … and ${n} more`);
      sections.push(`#### \`${path}\`: invalid\n\n${shown.join("\n")}`);
    }
  }
  const ok = issues.length === 0;
  const note = unannotated(issues);
  const summary = [...(note ? [`_${note}_`] : []), ...sections].join("\n\n");
  await ctx.octokit.rest.checks.create({
    ...repo,
    name: "agentrelay / plan",
    head_sha: pr.head.sha,
    status: "completed",
    conclusion: ok ? "success" : "failure",
    output: {
      title: ok
        ? `${graphs.length} graph${graphs.length > 1 ? "s" : ""} valid`
        : `${issues.length} problem${issues.length > 1 ? "s" : ""} in the graph`,
      summary,
      ...(ok ? {} : { annotations: annotations(issues) }),
    },
  });
  const body = `${PLAN_MARKER}\n### agentrelay plan\n\nNothing runs from a pull request; merging into \`${ctx.defaultBranch}\` starts the run.\n\n${summary}`;
  const comments = await ctx.octokit.paginate(ctx.octokit.rest.issues.listComments, {
    ...repo,
    issue_number: pr.number,
    per_page: 100,
  });
  const sticky = comments.find((c) => c.body?.startsWith(PLAN_MARKER) && c.performed_via_github_app);
  if (sticky) await ctx.octokit.rest.issues.updateComment({ ...repo, comment_id: sticky.id, body });
  else await ctx.octokit.rest.issues.createComment({ ...repo, issue_number: pr.number, body });
}

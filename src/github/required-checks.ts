/**
 * The checks a repository requires before a PR into a branch merges, and which of them failed on a
 * commit: what verification counts besides the workstream's own gates on GitHub. One place reads
 * them, so that every use agrees with GitHub's rules:
 * - rulesets: "Get rules for a branch" answers the active rules of every level (repository,
 *   organization), `required_status_checks` among them, with metadata:read
 *   (https://docs.github.com/en/rest/repos/rules#get-rules-for-a-branch);
 * - branch protection: "Get a branch" names its required status checks (`protection.required_status_checks`,
 *   https://docs.github.com/en/rest/branches/branches#get-a-branch).
 * A check counts as failed when its latest run on the commit concluded anything but success,
 * neutral or skipped (https://docs.github.com/en/rest/checks/runs#list-check-runs-for-a-git-reference).
 */
import type { RepoContext } from "./client.ts";
import { statusOf } from "./client.ts";

/** The names (contexts) of the checks a PR into `branch` must pass. */
export async function requiredChecks(ctx: RepoContext, branch: string): Promise<string[]> {
  const repo = { owner: ctx.owner, repo: ctx.repo };
  const names = new Set<string>();
  const { data: rules } = await ctx.octokit.request("GET /repos/{owner}/{repo}/rules/branches/{branch}", {
    ...repo,
    branch,
    per_page: 100,
  });
  for (const rule of rules as {
    type: string;
    parameters?: { required_status_checks?: { context: string }[] };
  }[])
    if (rule.type === "required_status_checks")
      for (const check of rule.parameters?.required_status_checks ?? []) names.add(check.context);
  try {
    const { data } = await ctx.octokit.rest.repos.getBranch({ ...repo, branch });
    const protection = data.protection?.required_status_checks;
    for (const context of protection?.contexts ?? []) names.add(context);
    for (const check of protection?.checks ?? []) names.add(check.context);
  } catch (error) {
    if (statusOf(error) !== 404) throw error;
  }
  return [...names].sort();
}

const PASSED = new Set(["success", "neutral", "skipped"]);

/**
 * What the required checks of `branch` that failed on `sha` said (names, conclusions and the start of
 * their summaries), or null when none failed (they pass, or still run).
 */
export async function failedRequiredChecks(
  ctx: RepoContext,
  branch: string,
  sha: string,
): Promise<string | null> {
  const required = await requiredChecks(ctx, branch);
  if (required.length === 0) return null;
  const { data } = await ctx.octokit.rest.checks.listForRef({
    owner: ctx.owner,
    repo: ctx.repo,
    ref: sha,
    filter: "latest",
    per_page: 100,
  });
  const failed = data.check_runs.filter(
    (run) => required.includes(run.name) && run.status === "completed" && !PASSED.has(run.conclusion ?? ""),
  );
  if (failed.length === 0) return null;
  return failed
    .map((run) =>
      [`${run.name}: ${run.conclusion}`, run.output?.title, run.output?.summary?.slice(0, 1_500)]
        .filter(Boolean)
        .join("\n"),
    )
    .join("\n\n");
}

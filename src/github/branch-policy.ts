/**
 * What a repository lets a merge into a branch do, read through the API as the app's token can read
 * it: the merge methods the repository allows (`allow_merge_commit`, `allow_squash_merge`,
 * `allow_rebase_merge`: https://docs.github.com/en/rest/repos/repos#get-a-repository), the rules
 * rulesets put on the branch (https://docs.github.com/en/rest/repos/rules#get-rules-for-a-branch:
 * `required_linear_history`, `required_status_checks`, `pull_request.allowed_merge_methods`) and
 * the status checks branch protection requires (https://docs.github.com/en/rest/branches/branches#get-a-branch,
 * `protection.required_status_checks`). Branch protection's linear history is not readable without
 * administration rights: a merge it refuses is answered 405, and the next allowed method is tried.
 */
import type { GitHubClient } from "./client.ts";
import { statusOf } from "./client.ts";

export type MergeMethod = "merge" | "squash" | "rebase";

/** In order of preference: a merge commit keeps each task's commits, then one commit per PR, then replayed commits. */
export const MERGE_METHODS: readonly MergeMethod[] = ["merge", "squash", "rebase"];

export interface BranchPolicy {
  /** The methods a merge into the branch may use, most preferred first (empty: none may). */
  methods: MergeMethod[];
  linearHistory: boolean;
  /** Status checks that must succeed on a PR's head before it merges. */
  requiredChecks: string[];
  /**
   * The app a required check is bound to, by name (absent: any app's check of that name counts): only
   * a check run that app made satisfies it. Rulesets' `integration_id`
   * (https://docs.github.com/en/rest/repos/rules#get-rules-for-a-branch), branch protection's
   * `checks[].app_id` (https://docs.github.com/en/rest/branches/branch-protection, "the ID of the
   * GitHub App that must provide this check"; null or -1: any).
   */
  checkApps?: Record<string, number>;
  /** What the repository allows, for messages. */
  allowed: Record<MergeMethod, boolean>;
  /** A ruleset requires a merge queue: PRs join it and its `merge_group` checks decide. */
  mergeQueue?: boolean;
}

/** GitHub Actions' own app (`GET /apps/github-actions`): the app of every check a workflow job makes. */
export const GITHUB_ACTIONS_APP_ID = 15368;

/** A required check as GitHub names it: its name, and the app it is bound to (if any). */
export interface RequiredCheck {
  context: string;
  app_id?: number | null;
}

interface Rule {
  type: string;
  parameters?: {
    required_status_checks?: { context: string; integration_id?: number | null }[];
    allowed_merge_methods?: MergeMethod[];
  };
}

/** A 405 that says the method is not allowed (by the repository or a rule): another method may do. */
export const METHOD_REFUSED = /are not allowed on this (repository|branch)|must not contain merge commits/i;

/** The policy from what GitHub answered (pure). */
export function policyOf(
  repository: Partial<Record<`allow_${"merge_commit" | "squash_merge" | "rebase_merge"}`, boolean>>,
  rules: readonly Rule[],
  protectionChecks: readonly (string | RequiredCheck)[],
): BranchPolicy {
  const allowed: Record<MergeMethod, boolean> = {
    // A field GitHub leaves out (a token that may not see it) is taken as allowed: a refusal says otherwise.
    merge: repository.allow_merge_commit !== false,
    squash: repository.allow_squash_merge !== false,
    rebase: repository.allow_rebase_merge !== false,
  };
  const linearHistory = rules.some((r) => r.type === "required_linear_history");
  const ruleMethods = rules
    .filter((r) => r.type === "pull_request" && r.parameters?.allowed_merge_methods)
    .map((r) => r.parameters!.allowed_merge_methods!);
  const methods = MERGE_METHODS.filter(
    (m) =>
      allowed[m] &&
      !(m === "merge" && linearHistory) &&
      ruleMethods.every((allowedByRule) => allowedByRule.includes(m)),
  );
  const checks: RequiredCheck[] = [
    ...protectionChecks.map((c) => (typeof c === "string" ? { context: c } : c)),
    ...rules.flatMap((r) =>
      r.type === "required_status_checks"
        ? (r.parameters?.required_status_checks ?? []).map((c) => ({
            context: c.context,
            app_id: c.integration_id ?? null,
          }))
        : [],
    ),
  ];
  const requiredChecks = [...new Set(checks.map((c) => c.context))];
  const checkApps: Record<string, number> = {};
  for (const c of checks) if (typeof c.app_id === "number" && c.app_id > 0) checkApps[c.context] = c.app_id;
  const mergeQueue = rules.some((r) => r.type === "merge_queue");
  return {
    methods,
    linearHistory,
    requiredChecks,
    allowed,
    ...(Object.keys(checkApps).length > 0 ? { checkApps } : {}),
    ...(mergeQueue ? { mergeQueue } : {}),
  };
}

/** Why nothing can merge into `branch`, in one line with the fix, or null when a method can. */
export function noMethodReason(branch: string, policy: BranchPolicy): string | null {
  if (policy.methods.length > 0) return null;
  const allowed = MERGE_METHODS.filter((m) => policy.allowed[m]);
  return allowed.length === 0
    ? `the repository allows no merge method: allow squash merging (Settings, General, Pull Requests)`
    : `nothing can merge into ${branch}: the repository allows only ${allowed.join(" and ")}, which the rules of ${branch} refuse${policy.linearHistory ? " (linear history)" : ""}: allow squash merging (Settings, General, Pull Requests), or change the rule`;
}

type RepositorySettings = Parameters<typeof policyOf>[0];

/**
 * Reads the policy of `branch`: the repository (unless given), its rules, and (with `protection`)
 * branch protection's required checks. A read the token may not make counts as nothing required.
 * A merge needs no more than the repository and the rules: GitHub's refusal names a required check.
 */
export async function readBranchPolicy(
  octokit: GitHubClient,
  owner: string,
  repo: string,
  branch: string,
  options: { repository?: RepositorySettings | Promise<RepositorySettings>; protection?: boolean } = {},
): Promise<BranchPolicy> {
  const { repository, protection: withProtection = true } = options;
  const tolerate =
    <T>(fallback: T) =>
    (error: unknown) => {
      if ([403, 404].includes(statusOf(error) ?? 0)) return fallback;
      throw error;
    };
  const [repoData, rules, protection] = await Promise.all([
    repository ?? octokit.rest.repos.get({ owner, repo }).then((r) => r.data as RepositorySettings),
    // Every page: a branch may have more rules than the 30 of the first.
    octokit
      .paginate("GET /repos/{owner}/{repo}/rules/branches/{branch}", { owner, repo, branch, per_page: 100 })
      .then((data) => data as Rule[])
      .catch(tolerate<Rule[]>([])),
    !withProtection
      ? Promise.resolve([] as (string | RequiredCheck)[])
      : octokit.rest.repos
          .getBranch({ owner, repo, branch })
          .then((r) => {
            const checks = r.data.protection?.required_status_checks;
            if (!checks || checks.enforcement_level === "off") return [];
            // `checks` names the app each is bound to; `contexts` (deprecated) only the names.
            return (checks.checks as RequiredCheck[] | undefined) ?? checks.contexts ?? [];
          })
          .catch(tolerate<(string | RequiredCheck)[]>([])),
  ]);
  return policyOf(repoData, rules, protection);
}

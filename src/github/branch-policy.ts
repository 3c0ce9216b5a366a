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
  /**
   * Whether, as far as the token can read, the app may move the branch itself (a fast-forward of the
   * ref to a verified commit: fast-forward.ts): the repository allows merge commits and no rule the
   * token sees guards the branch beyond creation, deletion and force pushes. Branch protection the
   * token cannot read may still refuse it: GitHub's refusal then says so.
   */
  directUpdate: boolean;
  /**
   * Required checks are strict ("Require branches to be up to date before merging": a ruleset's
   * `strict_required_status_checks_policy`, branch protection's `strict`): GitHub refuses the merge of
   * a PR whose head does not hold the base as it is now, so a target that moved after the check
   * cannot be merged into unverified.
   */
  strictChecks: boolean;
}

/**
 * Rule types that leave a fast-forward by the app allowed (https://docs.github.com/en/rest/repos/rules#get-rules-for-a-branch):
 * "Restrict creations", "Restrict deletions", "Block force pushes". Any other (`update`,
 * `pull_request`, `required_status_checks`, `merge_queue`, `required_linear_history`, signatures,
 * deployments, code scanning, ...) refuses a push that does not come through a PR, or may.
 */
const DIRECT_UPDATE_RULES = new Set(["creation", "deletion", "non_fast_forward"]);

/** GitHub Actions' own app (`GET /apps/github-actions`): the app of every check a workflow job makes. */
export const GITHUB_ACTIONS_APP_ID = 15368;

/** A required check as GitHub names it: its name, and the app it is bound to (if any). */
export interface RequiredCheck {
  context: string;
  app_id?: number | null;
}

/** What branch protection says, as far as the token reads it (none: not protected, or not readable). */
export interface Protection {
  checks: readonly (string | RequiredCheck)[];
  /** Its required checks must pass on a branch up to date with it (`strict`). */
  strict?: boolean;
}

interface Rule {
  type: string;
  parameters?: {
    required_status_checks?: { context: string; integration_id?: number | null }[];
    strict_required_status_checks_policy?: boolean;
    allowed_merge_methods?: MergeMethod[];
  };
}

/** A 405 that says the method is not allowed (by the repository or a rule): another method may do. */
export const METHOD_REFUSED = /are not allowed on this (repository|branch)|must not contain merge commits/i;

/** The policy from what GitHub answered (pure). */
export function policyOf(
  repository: Partial<Record<`allow_${"merge_commit" | "squash_merge" | "rebase_merge"}`, boolean>>,
  rules: readonly Rule[],
  protection: Protection | readonly (string | RequiredCheck)[],
): BranchPolicy {
  const { checks: protectionChecks, strict: protectionStrict = false } =
    "checks" in protection ? protection : { checks: protection };
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
  const strictChecks =
    (protectionStrict && protectionChecks.length > 0) ||
    rules.some(
      (r) =>
        r.type === "required_status_checks" && r.parameters?.strict_required_status_checks_policy === true,
    );
  // A fast-forward brings the branch's merge commits: only where the repository allows merge commits.
  const directUpdate =
    methods.includes("merge") &&
    protectionChecks.length === 0 &&
    rules.every((r) => DIRECT_UPDATE_RULES.has(r.type));
  return {
    methods,
    linearHistory,
    requiredChecks,
    allowed,
    directUpdate,
    strictChecks,
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
      ? Promise.resolve<Protection>({ checks: [] })
      : octokit.rest.repos
          .getBranch({ owner, repo, branch })
          .then((r): Protection => {
            const checks = r.data.protection?.required_status_checks as
              | { enforcement_level?: string; contexts: string[]; checks?: RequiredCheck[]; strict?: boolean }
              | undefined;
            if (!checks || checks.enforcement_level === "off") return { checks: [] };
            // `checks` names the app each is bound to; `contexts` (deprecated) only the names.
            return { checks: checks.checks ?? checks.contexts ?? [], strict: checks.strict === true };
          })
          .catch(tolerate<Protection>({ checks: [] })),
  ]);
  return policyOf(repoData, rules, protection);
}

/**
 * A repository's settings and rules as the fake GitHub enforces them, on by default (a test that
 * needs one off says so). Each rule cites where GitHub says it:
 * - Merge methods (https://docs.github.com/en/rest/pulls/pulls#merge-a-pull-request, and the
 *   repository's `allow_merge_commit`, `allow_squash_merge`, `allow_rebase_merge` in
 *   https://docs.github.com/en/rest/repos/repos#get-a-repository): a method the repository does not
 *   allow is answered 405 "Merge commits are not allowed on this repository." (the words quoted in
 *   Mergifyio/mergify#1812 and github/github-mcp-server#2258; "Squash merges" and "Rebase merges" for
 *   the others).
 * - Rules for a branch, from rulesets (https://docs.github.com/en/rest/repos/rules#get-rules-for-a-branch;
 *   "About rulesets") and from branch protection (https://docs.github.com/en/rest/branches/branches#get-a-branch,
 *   its `protection.required_status_checks`; "About protected branches"): linear history forbids
 *   merge commits on the branch, so a merge-commit merge is refused ("This branch must not contain
 *   merge commits.", as a ruleset says it in peter-evans/create-pull-request#4428); a ruleset may list
 *   the merge methods it allows (`pull_request.allowed_merge_methods`); a required status check must
 *   have succeeded on the PR's head before the merge (405 'Required status check "ci" is expected.',
 *   the words Mergify matches in its REQUIRED_STATUS_RE).
 * - The `workflows` permission: a push, branch merge or PR merge that creates or changes a file under
 *   `.github/workflows/` is refused 403 "refusing to allow a GitHub App to create or update workflow
 *   ... without `workflows` permission" (chdsbd/kodiak#641 and #853, peter-evans/create-pull-request#1713);
 *   GITHUB_TOKEN can never hold it, an app only when installed with "Workflows: write".
 * - "Allow GitHub Actions to create and approve pull requests" (Settings, Actions, General; read at
 *   https://docs.github.com/en/rest/actions/permissions#get-default-workflow-permissions-for-a-repository
 *   as `can_approve_pull_request_reviews`): off, GitHub refuses the PRs GITHUB_TOKEN opens, 403 "GitHub
 *   Actions is not permitted to create or approve pull requests."
 * - GITHUB_TOKEN's primary rate limit: 1,000 requests an hour per repository (an installation's is
 *   5,000 and up): https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#primary-rate-limit-for-github_token-in-github-actions.
 */
import type { Reply } from "./fake-reply.ts";
import { matchesFilter } from "../src/github/workflow-files.ts";
export { GITHUB_ACTIONS_APP_ID } from "../src/github/branch-policy.ts";

export type MergeMethod = "merge" | "squash" | "rebase";
export type TokenKind = "app" | "github_token";

/** A branch rule: from a ruleset or from classic branch protection, on branches matching `pattern`. */
export interface BranchRule {
  /** fnmatch as GitHub's rules take it (`main`, `agentrelay/**`), or `~DEFAULT_BRANCH`, `~ALL`. */
  pattern: string;
  source: "ruleset" | "protection";
  linearHistory?: boolean;
  requiredChecks?: string[];
  /**
   * Required checks bound to an app, by name: only a check run that app made satisfies one (rulesets'
   * `integration_id`, branch protection's `checks[].app_id`:
   * https://docs.github.com/en/rest/branches/branch-protection#update-branch-protection, "The ID of
   * the GitHub App that must provide this check"; "About protected branches", Require status checks
   * before merging: with a source selected, a check set by any other integration does not let the PR
   * merge). A check of that name from another app is as if none had reported.
   */
  checkApps?: Record<string, number>;
  /** A ruleset's pull_request rule: the merge methods it allows. */
  mergeMethods?: MergeMethod[];
  /** A ruleset's pull_request rule ("Require a pull request before merging"), with or without methods. */
  pullRequest?: boolean;
  /**
   * Its required checks are strict ("Require branches to be up to date before merging": a ruleset's
   * `strict_required_status_checks_policy`, branch protection's `strict`): a PR whose head does not
   * hold the base as it is now is refused as if its checks had not reported (405 'Required status
   * check "ci" is expected.': with the head BEHIND, GitHub reports the checks "expected",
   * RakuenSoftware/aimee#2460).
   */
  strict?: boolean;
  /** The ruleset made through the API that holds the rule (fake-rulesets.ts). */
  rulesetId?: number;
}

const METHOD_WORDS: Record<MergeMethod, string> = {
  merge: "Merge commits",
  squash: "Squash merges",
  rebase: "Rebase merges",
};

export const WORKFLOWS_DIR = ".github/workflows/";

/** GitHub's refusal of a change to a workflow file by a token without the `workflows` permission. */
export const workflowsRefusal = (path: string): Reply => [
  403,
  {
    message: `refusing to allow a GitHub App to create or update workflow \`${path}\` without \`workflows\` permission`,
  },
];

/** The 403 GitHub answers a PR that GITHUB_TOKEN opens where the repository does not allow it. */
export const ACTIONS_MAY_NOT_OPEN_PRS = "GitHub Actions is not permitted to create or approve pull requests.";

/** Whether a rule's target (fnmatch, or `~ALL`, `~DEFAULT_BRANCH`) names a branch. */
function matches(pattern: string, branch: string, defaultBranch: string): boolean {
  if (pattern === "~ALL") return true;
  if (pattern === "~DEFAULT_BRANCH") return branch === defaultBranch;
  return matchesFilter([pattern], branch);
}

export class RepoSettings {
  readonly defaultBranch = "main";
  /** The repository's merge buttons (Settings, General, Pull Requests). */
  readonly mergeMethods: Record<MergeMethod, boolean> = { merge: true, squash: true, rebase: true };
  /** Settings, Actions, General: "Allow GitHub Actions to create and approve pull requests". */
  actionsCanCreatePullRequests = true;
  /** Settings, Actions, General: Actions on, and which actions may run ("all", "local_only", "selected"). */
  actionsEnabled = true;
  allowedActions: "all" | "local_only" | "selected" = "all";
  /** Whether an organisation owns the repository (its policies may grey out the settings above). */
  organization = false;
  readonly rules: BranchRule[] = [];
  /** Whose token the orchestrator holds: a registered app's, or the workflow's GITHUB_TOKEN. */
  token: TokenKind = "app";
  /** Branches whose rules require a merge queue (fake-merge-queue.ts). */
  readonly mergeQueue = new Set<string>();
  /** The app's slug: its comments are `SLUG[bot]`'s (GITHUB_TOKEN's are `github-actions[bot]`'s). */
  appSlug = "agentrelay";
  /** Whether that token holds the `workflows` permission (GITHUB_TOKEN never does). */
  workflowsPermission = false;
  /**
   * The pull_request runs of a PR GITHUB_TOKEN opened or updated are created waiting until a person
   * with write access approves them: GitHub documents it ("Triggering a workflow from a workflow":
   * opened, synchronize and reopened caused by GITHUB_TOKEN create runs "in an approval-required
   * state", other activity types none; the GITHUB_TOKEN page, github/docs#44419: "use a GitHub App
   * installation token" for runs that need no approval). On by default; off is the older behaviour
   * (no runs at all), which a repository not yet moved to the rule may still show.
   */
  approvalForActionsPullRequests = true;
  /** Repository (and organisation) secrets and variables by name, as `doctor` reads them. */
  readonly secrets = new Set<string>(["ANTHROPIC_API_KEY"]);
  readonly variables = new Map<string, string>();
  /** Workflows disabled through the API (https://docs.github.com/en/rest/actions/workflows#disable-a-workflow). */
  readonly disabledWorkflows = new Set<string>();
  /**
   * Scheduled workflows GitHub turned off: "In a public repository, scheduled workflows are
   * automatically disabled when no repository activity has occurred in 60 days"
   * (https://docs.github.com/en/actions/how-tos/manage-workflow-runs/disable-and-enable-workflows);
   * state `disabled_inactivity` until enabled again. Public by default (the stricter case).
   */
  readonly inactiveWorkflows = new Set<string>();
  visibility: "public" | "private" = "public";

  /** Who the orchestrator's comments are by, as GitHub shows them. */
  get ownLogin(): string {
    return this.token === "github_token" ? "github-actions[bot]" : `${this.appSlug}[bot]`;
  }

  /** GitHub's primary limit for the token: 1,000 requests an hour for GITHUB_TOKEN, 5,000 for an app. */
  get requestsPerHour(): number {
    return this.token === "github_token" ? 1_000 : 5_000;
  }

  private rulesOf(branch: string, source?: BranchRule["source"]): BranchRule[] {
    return this.rules.filter(
      (r) => (!source || r.source === source) && matches(r.pattern, branch, this.defaultBranch),
    );
  }

  linearHistory(branch: string): boolean {
    return this.rulesOf(branch).some((r) => r.linearHistory);
  }

  requiredChecks(branch: string): string[] {
    return [...new Set(this.rulesOf(branch).flatMap((r) => r.requiredChecks ?? []))];
  }

  /** The app a required check on `branch` is bound to, if a rule binds it. */
  checkApp(branch: string, name: string): number | undefined {
    return this.rulesOf(branch).find((r) => r.checkApps?.[name] !== undefined)?.checkApps?.[name];
  }

  /** Whether `branch`'s required checks are strict (up to date before merging). */
  strictChecks(branch: string): boolean {
    return this.rulesOf(branch).some((r) => r.strict && r.requiredChecks?.length);
  }

  /**
   * Why GitHub refuses a direct update of `branch` (a ref update or a push, not a PR's merge), 422, or
   * null. A ruleset that requires PRs or a merge queue: "Repository rule violations found" with the
   * rule (its REST answer to `PATCH /git/refs` quoted in satisfactory-factories/application#67:
   * "Changes must be made through a pull request."). Required checks refuse a commit they have not
   * passed on (the ruleset's words: "Choose which status checks must pass before the ref is updated.
   * When enabled, commits must first be pushed to another ref where the checks pass."); branch
   * protection says "Protected branch update failed for refs/heads/…" and the check (a push's words in
   * pretis/flexpret#40; a ref update's 422 as actions/github-script#455 shows for a protected
   * branch). Not modelled: linear history (agentrelay never updates a branch directly where merge
   * commits are refused), and a ruleset's required checks on a push (GitHub refuses it as branch
   * protection does; the fake's scripted task jobs push through this API to `agentrelay/**`
   * branches that tests give such rulesets, and the product never updates a branch directly where a
   * ruleset it can read requires checks: branch-policy.ts, `directUpdate`).
   */
  directUpdateRefusal(branch: string, queue: boolean, passed: (check: string) => boolean): string | null {
    const violation = "Repository rule violations found\n\n";
    if (queue) return `${violation}Changes must be made through the merge queue`;
    const rules = this.rulesOf(branch);
    if (rules.some((r) => r.source === "ruleset" && (r.pullRequest || r.mergeMethods)))
      return `${violation}Changes must be made through a pull request.`;
    const missing = (r: BranchRule) => r.requiredChecks?.find((c) => !passed(c));
    const unmet = rules.find((r) => r.source === "protection" && (r.pullRequest || missing(r)));
    if (!unmet) return null;
    const words = missing(unmet)
      ? `Required status check "${missing(unmet)}" is expected.`
      : "Changes must be made through a pull request.";
    return `Protected branch update failed for refs/heads/${branch}.\n\n${words}`;
  }

  /** Why GitHub refuses to merge into `branch` with `method` (405), or null. */
  refusedMethod(method: MergeMethod, branch: string): string | null {
    if (!this.mergeMethods[method]) return `${METHOD_WORDS[method]} are not allowed on this repository.`;
    if (method === "merge" && this.linearHistory(branch))
      return "Repository rule violations found\n\nThis branch must not contain merge commits.";
    const allowed = this.rulesOf(branch, "ruleset").find((r) => r.mergeMethods)?.mergeMethods;
    if (allowed && !allowed.includes(method))
      return `Repository rule violations found\n\n${METHOD_WORDS[method]} are not allowed on this branch.`;
    return null;
  }

  /** What GitHub's rules API answers for a branch (rulesets only: branch protection is not in it). */
  rulesApi(branch: string): object[] {
    const source = { ruleset_source_type: "Repository", ruleset_source: "octo/demo", ruleset_id: 1 };
    // A required merge queue (https://docs.github.com/en/rest/repos/rules#get-rules-for-a-branch, type `merge_queue`).
    const queue = this.mergeQueue.has(branch)
      ? [
          {
            type: "merge_queue",
            parameters: { merge_method: "MERGE", grouping_strategy: "ALLGREEN" },
            ...source,
          },
        ]
      : [];
    return [
      ...queue,
      ...this.rulesOf(branch, "ruleset").flatMap((r) => [
        ...(r.linearHistory ? [{ type: "required_linear_history", ...source }] : []),
        ...(r.requiredChecks
          ? [
              {
                type: "required_status_checks",
                parameters: {
                  strict_required_status_checks_policy: r.strict === true,
                  required_status_checks: r.requiredChecks.map((context) => ({
                    context,
                    ...(r.checkApps?.[context] !== undefined ? { integration_id: r.checkApps[context] } : {}),
                  })),
                },
                ...source,
              },
            ]
          : []),
        ...(r.mergeMethods || r.pullRequest
          ? [
              {
                type: "pull_request",
                parameters: {
                  allowed_merge_methods: r.mergeMethods ?? ["merge", "squash", "rebase"],
                  dismiss_stale_reviews_on_push: false,
                  require_code_owner_review: false,
                  require_last_push_approval: false,
                  required_approving_review_count: 0,
                  required_review_thread_resolution: false,
                },
                ...source,
              },
            ]
          : []),
      ]),
    ];
  }

  /** The `protection` part of GitHub's "get a branch" answer (what branch protection requires). */
  branchProtection(branch: string): { protected: boolean; protection?: object } {
    const rules = this.rulesOf(branch, "protection");
    if (rules.length === 0) return { protected: false };
    const contexts = [...new Set(rules.flatMap((r) => r.requiredChecks ?? []))];
    const appOf = (context: string) =>
      rules.find((r) => r.checkApps?.[context] !== undefined)?.checkApps?.[context];
    return {
      protected: true,
      protection: {
        enabled: true,
        required_status_checks: {
          enforcement_level: contexts.length ? "non_admins" : "off",
          strict: rules.some((r) => r.strict),
          contexts,
          checks: contexts.map((context) => ({ context, app_id: appOf(context) ?? null })),
        },
      },
    };
  }
}

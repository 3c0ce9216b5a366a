/**
 * `agentrelay doctor`: reads a repository's settings through the API and names, one line each with
 * its fix, what would stall a run or silently skip work: no merge method the rules accept, required
 * checks that task or integration PRs can never satisfy, CI whose branch filters skip agentrelay's
 * branches, PRs GITHUB_TOKEN may not open, missing secrets, outdated agentrelay workflow files.
 * The command line runs it with a person's token (which may read secrets and Actions settings); the
 * orchestrator runs what its own token can read when a run starts, and the run's first status
 * comment shows it.
 */
import type { GitHubClient } from "./client.ts";
import { statusOf } from "./client.ts";
import {
  type BranchPolicy,
  GITHUB_ACTIONS_APP_ID,
  noMethodReason,
  readBranchPolicy,
} from "./branch-policy.ts";
import {
  AGENTRELAY_WORKFLOWS,
  ciOn,
  matchesFilter,
  orchestratorListens,
  parseWorkflow,
  reportsCheck,
  SAMPLE_INTEGRATION_BRANCH,
  type Workflow,
  type WorkflowFile,
} from "./workflow-files.ts";

export interface RepoFacts {
  defaultBranch: string;
  defaultPolicy: BranchPolicy;
  integrationPolicy: BranchPolicy;
  workflows: Workflow[];
  /** Whose token the orchestrator workflow holds (null: not known, or there is an app server). */
  token: "app" | "github_token" | null;
  /** Secret and variable names the repository can use (null: this token may not read them). */
  secrets: string[] | null;
  variables: string[] | null;
  /** "Allow GitHub Actions to create and approve pull requests" (null: not readable). */
  actionsCanCreatePullRequests: boolean | null;
  /** Whether Actions runs here, and which actions may (null: not readable). */
  actions?: { enabled: boolean; allowedActions: string } | null;
  /** An organisation owns the repository: its policies can turn settings off and grey them out here. */
  organization?: boolean;
}

/** Upload-artifact versions that run on Node 20, which GitHub replaced with Node 24 for actions. */
const NODE20_UPLOAD = /actions\/upload-artifact@(ea165f8d65b6e75b540449e92b4886f43607fa02|v[1-5](\.|\s|$))/m;
const [ORCHESTRATOR, TASK, SCHEDULE] = AGENTRELAY_WORKFLOWS as [string, string, string];
const FILE = (path: string) => `\`${path.replace(".github/workflows/", "")}\``;

/** Everything that would stall or silently skip work, one line each: what, then the fix. */
export function findings(facts: RepoFacts): string[] {
  const out: string[] = [];
  const byPath = new Map(facts.workflows.map((w) => [w.path, w]));
  const orchestrator = byPath.get(ORCHESTRATOR);
  const task = byPath.get(TASK);
  // Branch patterns are code, as files are: a reader copies them into a rule or a workflow.
  const integration = "`agentrelay/…/integration`";
  if (!task)
    out.push(
      `agentrelay is not installed on ${facts.defaultBranch} (no .github/workflows/agentrelay-task.yml): run \`agentrelay init\` (or \`init --no-app\`) and push`,
    );
  for (const [branch, policy] of [
    [facts.defaultBranch, facts.defaultPolicy],
    [integration, facts.integrationPolicy],
  ] as const) {
    const none = noMethodReason(branch, policy);
    if (none) out.push(none);
    // A merge queue merges what its `merge_group` checks pass: CI that never runs on the group stalls it.
    if (
      policy.mergeQueue &&
      !facts.workflows.some((w) => !AGENTRELAY_WORKFLOWS.includes(w.path) && "merge_group" in w.on)
    )
      out.push(
        `${branch} requires a merge queue, and no CI workflow runs on \`merge_group\`, so its required checks never report on a merge group: add \`merge_group:\` to the \`on:\` of your CI workflow (docs/github.md, Merge queues)`,
      );
  }
  // Where agentrelay cannot land by a fast-forward GitHub refuses once the target moved, only strict
  // checks or a merge queue make GitHub refuse to merge what the target's move left unverified.
  const target = facts.defaultPolicy;
  if (!target.directUpdate && !target.strictChecks && !target.mergeQueue && target.methods.length > 0)
    out.push(
      `the rules of ${facts.defaultBranch} keep agentrelay from updating it itself, and nothing there refuses to merge a PR once ${facts.defaultBranch} moved after its verification (no strict required check, no merge queue), so a push to ${facts.defaultBranch} between the check and the merge lands a combination nobody verified (agentrelay says so right after): turn on "Require branches to be up to date before merging" for a required check of ${facts.defaultBranch}, or require a merge queue (docs/runs.md, When the target moves)`,
    );
  if (facts.integrationPolicy.linearHistory)
    out.push(
      `a rule requires linear history on ${integration}: integration branches are brought up to date, and conflicts resolved, with merge commits, which it refuses: exempt \`agentrelay/**\` from the rule`,
    );
  for (const w of facts.workflows.filter((w) => w.broken))
    out.push(`${FILE(w.path)} is not a readable workflow: fix its YAML`);
  const taskCi = ciOn(facts.workflows, SAMPLE_INTEGRATION_BRANCH);
  for (const w of ciOn(facts.workflows, facts.defaultBranch))
    if (!taskCi.includes(w))
      out.push(
        `CI workflow ${FILE(w.path)} runs on PRs into ${facts.defaultBranch} but not into ${integration}, so task PRs get no CI from it: add \`agentrelay/**\` to its \`pull_request\` branches`,
      );
  const required: [string, BranchPolicy, Workflow[], string][] = [
    [integration, facts.integrationPolicy, taskCi, "task PRs"],
    [facts.defaultBranch, facts.defaultPolicy, ciOn(facts.workflows, facts.defaultBranch), "integration PRs"],
  ];
  for (const [branch, policy, ci, prs] of required)
    for (const check of policy.requiredChecks) {
      // A check bound to an app is satisfied only by that app's check run: a workflow's job makes
      // GitHub Actions' (branch-policy.ts, `checkApps`).
      const app = policy.checkApps?.[check];
      if (app !== undefined && app !== GITHUB_ACTIONS_APP_ID) {
        const workflow = ci.find((w) => reportsCheck(w, check));
        out.push(
          `the required check ${check} on ${branch} is bound to the app with id ${app}, not to GitHub Actions, so only that app's check satisfies it${workflow ? ` (not the one ${FILE(workflow.path)} reports)` : ""}: if that app does not report ${check} on ${prs}, they wait for it forever: make it report there, or set the check's source to GitHub Actions or any source`,
        );
      } else if (!ci.some((w) => reportsCheck(w, check)))
        out.push(
          `the required check ${check} on ${branch} comes from no workflow that runs on PRs into it, so ${prs} would wait for it forever: make a workflow that runs on those PRs report it${app === undefined ? " (a check from another CI app counts too)" : ""}, or stop requiring it there`,
        );
    }
  // GitHub creates the pull_request runs of a PR GITHUB_TOKEN opens or pushes to waiting for a person's
  // approval (Triggering a workflow from a workflow): each push agentrelay makes needs a click.
  const held = (checks: string[], branch: string, prs: string) =>
    `${prs} are opened and pushed to with GITHUB_TOKEN, whose pull_request runs GitHub holds until a person with write access presses "Approve workflows to run", so the required check ${checks.join(", ")} on ${branch} needs that click for every push agentrelay makes (retries, bringing a PR up to date, verifications, repairs): register an app (docs/github.md, Tokens), whose PRs run CI by themselves`;
  if (orchestrator && facts.token === "github_token" && facts.integrationPolicy.requiredChecks.length > 0)
    out.push(
      `${held(facts.integrationPolicy.requiredChecks, integration, "task PRs")}, or stop requiring it on \`agentrelay/**\``,
    );
  if (orchestrator && facts.token === "github_token" && facts.defaultPolicy.requiredChecks.length > 0)
    out.push(held(facts.defaultPolicy.requiredChecks, facts.defaultBranch, "integration PRs"));
  // An organisation's policy overrides these settings and greys them out in each repository
  // (https://docs.github.com/en/organizations/managing-organization-settings/disabling-or-limiting-github-actions-for-your-organization).
  const greyed = (what: string) =>
    facts.organization
      ? `; if it is greyed out, the organisation's policy decides: an owner changes it in the organisation's Settings, Actions, General${what ? `, ${what}` : ""}`
      : "";
  if (orchestrator && facts.token === "github_token" && facts.actionsCanCreatePullRequests === false)
    out.push(
      `GitHub refuses the PRs the orchestrator opens with GITHUB_TOKEN: turn on Settings, Actions, General, "Allow GitHub Actions to create and approve pull requests" (or register an app)${greyed("Workflow permissions")}`,
    );
  if (facts.actions && !facts.actions.enabled)
    out.push(
      `GitHub Actions is turned off for this repository, so no task job runs: turn it on in Settings, Actions, General${greyed("Policies")}`,
    );
  else if (facts.actions && facts.actions.allowedActions !== "all")
    out.push(
      `only ${facts.actions.allowedActions === "local_only" ? "this repository's own" : "selected"} actions may run here, so agentrelay's Action and the actions its workflows use (actions/upload-artifact${orchestrator ? ", actions/create-github-app-token" : ""}) may be refused: allow them in Settings, Actions, General${greyed("Policies")}`,
    );
  if (
    facts.secrets &&
    !facts.secrets.some((s) => s === "ANTHROPIC_API_KEY" || s === "CLAUDE_CODE_OAUTH_TOKEN")
  )
    out.push(
      "no secret ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN: every attempt would fail before its agent starts: add one (Settings, Secrets and variables, Actions)",
    );
  if (
    orchestrator &&
    facts.variables?.includes("AGENTRELAY_APP_CLIENT_ID") &&
    facts.secrets &&
    !facts.secrets.includes("AGENTRELAY_APP_PRIVATE_KEY")
  )
    out.push(
      "the variable AGENTRELAY_APP_CLIENT_ID names an app, but there is no secret AGENTRELAY_APP_PRIVATE_KEY: the orchestrator cannot act as it: add the app's private key as that secret",
    );
  if (task && !orchestrator && facts.variables && !facts.variables.includes("AGENTRELAY_APP_URL"))
    out.push(
      "no variable AGENTRELAY_APP_URL: task jobs cannot reach the agentrelay app: set it to the app's public address (or use `init --no-app`)",
    );
  out.push(...outdated(facts, byPath, taskCi));
  return out;
}

/** agentrelay's workflow files that are older than what `init` writes now, and what that costs. */
function outdated(facts: RepoFacts, byPath: Map<string, Workflow>, taskCi: Workflow[]): string[] {
  const out: string[] = [];
  const again = (noApp: boolean) => `run \`agentrelay init${noApp ? " --no-app" : ""} --force\` and push`;
  const orchestrator = byPath.get(ORCHESTRATOR);
  for (const w of facts.workflows.filter((w) => AGENTRELAY_WORKFLOWS.includes(w.path)))
    if (NODE20_UPLOAD.test(w.text))
      out.push(
        `${FILE(w.path)} pins actions/upload-artifact at a version that runs on Node 20, which GitHub replaced with Node 24: ${again(Boolean(orchestrator))}`,
      );
  if (!orchestrator) return out;
  if (orchestrator.on.schedule)
    out.push(
      `${FILE(ORCHESTRATOR)} runs every 15 minutes even with no run active (about 2,900 runner-minutes a month on a private repository): ${again(true)} (the schedule moves to ${FILE(SCHEDULE)}, on only while a run is)`,
    );
  else if (!byPath.has(SCHEDULE))
    out.push(`${FILE(SCHEDULE)} is missing: nothing picks up a lost event: ${again(true)}`);
  const branches = orchestrator.on.workflow_run?.branches;
  if (Array.isArray(branches) && !matchesFilter(branches.map(String), facts.defaultBranch))
    out.push(
      `${FILE(ORCHESTRATOR)} does not start when a task job ends: its workflow_run branches leave out ${facts.defaultBranch}, where task jobs run, so every step waits for the 15-minute schedule: add ${facts.defaultBranch} to them (${again(true)})`,
    );
  const task = byPath.get(TASK);
  if (task && !handsOver(task))
    out.push(
      `${FILE(TASK)} does not hand over to the orchestrator when a task job ends (GitHub documents no workflow_run for runs GITHUB_TOKEN dispatched), so every step may wait for the 15-minute schedule: ${again(true)}`,
    );
  const listens = orchestratorListens(orchestrator);
  // `workflow_run.workflows` entries are glob patterns over workflow names.
  const deaf = taskCi.filter((w) => !matchesFilter(listens, w.name));
  if (deaf.length > 0)
    out.push(
      `${FILE(ORCHESTRATOR)} does not start when ${deaf.map((w) => FILE(w.path)).join(", ")} finishes on a task PR, so merges wait for the 15-minute schedule: add ${deaf.map((w) => JSON.stringify(w.name)).join(", ")} to its workflow_run workflows (${again(true)})`,
    );
  return out;
}

/** Whether a no-app task workflow's last job dispatches the orchestrator workflow (what init writes). */
function handsOver(task: Workflow): boolean {
  return /^\s+run: gh workflow run agentrelay\.yml\b.*-f task-run=/m.test(task.text);
}

/** Lines that say how the repository will be merged into (not problems). */
export function mergeNotes(facts: RepoFacts): string[] {
  const say = (branch: string, policy: BranchPolicy) =>
    policy.methods.length > 0
      ? `merges into ${branch} use ${policy.methods[0]}${policy.requiredChecks.length ? ` and wait for ${policy.requiredChecks.join(", ")}` : ""}`
      : null;
  return [
    say(facts.defaultBranch, facts.defaultPolicy),
    say("agentrelay/…/integration", facts.integrationPolicy),
  ].filter((l): l is string => l !== null);
}

/** A read the token may not make (403, 404): null. */
async function maybe<T>(read: () => Promise<T>): Promise<T | null> {
  try {
    return await read();
  } catch (error) {
    if ([403, 404].includes(statusOf(error) ?? 0)) return null;
    throw error;
  }
}

/** The workflow files on a branch (the contents API: the folder, then each file's text). */
export async function readWorkflowFiles(
  octokit: GitHubClient,
  owner: string,
  repo: string,
  ref: string,
): Promise<WorkflowFile[]> {
  const listing = await maybe(
    async () => (await octokit.rest.repos.getContent({ owner, repo, path: ".github/workflows", ref })).data,
  );
  if (!Array.isArray(listing)) return [];
  const files = listing.filter((e) => e.type === "file" && /\.ya?ml$/.test(e.name));
  return Promise.all(
    files.map(async (e) => ({
      path: e.path,
      text: String(
        (
          await octokit.rest.repos.getContent({
            owner,
            repo,
            path: e.path,
            ref,
            mediaType: { format: "raw" },
          })
        ).data,
      ),
    })),
  );
}

/**
 * What doctor reads of a repository. `settings`: also secrets, variables and Actions settings (a
 * person's token; an app's or the orchestrator's may not). `workflows`: the files to judge instead of
 * the default branch's (init's, before they are pushed).
 */
export async function readRepoFacts(
  octokit: GitHubClient,
  owner: string,
  repo: string,
  options: { settings: boolean; workflows?: WorkflowFile[]; token?: RepoFacts["token"] },
): Promise<RepoFacts> {
  const { data: repository } = await octokit.rest.repos.get({ owner, repo });
  const defaultBranch = repository.default_branch;
  const [defaultPolicy, integrationPolicy, files] = await Promise.all([
    readBranchPolicy(octokit, owner, repo, defaultBranch, { repository }),
    readBranchPolicy(octokit, owner, repo, SAMPLE_INTEGRATION_BRANCH, { repository }),
    options.workflows ?? readWorkflowFiles(octokit, owner, repo, defaultBranch),
  ]);
  const names = async (route: string, key: "secrets" | "variables") =>
    maybe(async () => {
      const { data } = await octokit.request(route, { owner, repo, per_page: 100 });
      return ((data as Record<string, { name: string }[]>)[key] ?? []).map((s) => s.name);
    });
  const [secrets, orgSecrets, variables, permissions, actions] = options.settings
    ? await Promise.all([
        names("GET /repos/{owner}/{repo}/actions/secrets", "secrets"),
        names("GET /repos/{owner}/{repo}/actions/organization-secrets", "secrets"),
        names("GET /repos/{owner}/{repo}/actions/variables", "variables"),
        maybe(
          async () =>
            (await octokit.request("GET /repos/{owner}/{repo}/actions/permissions/workflow", { owner, repo }))
              .data as { can_approve_pull_request_reviews?: boolean },
        ),
        maybe(
          async () =>
            (await octokit.request("GET /repos/{owner}/{repo}/actions/permissions", { owner, repo }))
              .data as {
              enabled: boolean;
              allowed_actions?: string;
            },
        ),
      ])
    : [null, null, null, null, null];
  const workflows = files.map(parseWorkflow);
  const token =
    options.token ??
    (variables === null ? null : variables.includes("AGENTRELAY_APP_CLIENT_ID") ? "app" : "github_token");
  return {
    defaultBranch,
    defaultPolicy,
    integrationPolicy,
    workflows,
    token,
    secrets: secrets === null ? null : [...secrets, ...(orgSecrets ?? [])],
    variables,
    actionsCanCreatePullRequests: permissions?.can_approve_pull_request_reviews ?? null,
    actions: actions ? { enabled: actions.enabled, allowedActions: actions.allowed_actions ?? "all" } : null,
    organization: (repository.owner as { type?: string } | undefined)?.type === "Organization",
  };
}

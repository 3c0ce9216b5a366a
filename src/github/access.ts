/**
 * Which of the repositories a graph names the credentials can reach, checked before anything is
 * written: the app's installation token (only the repositories the installation was granted), a
 * workflow's GITHUB_TOKEN (its own repository only), or a person's or fine-grained token (those it
 * was given access to). Each repository it cannot reach is one line with the fix.
 *
 * GitHub answers 404 for a repository a token cannot see (it does not say that a private repository
 * exists), and an installation token reaches only "the repositories that the installation can access"
 * (https://docs.github.com/en/rest/apps/apps#create-an-installation-access-token-for-an-app); a
 * GITHUB_TOKEN's "permissions are limited to the repository that contains your workflow"
 * (https://docs.github.com/en/actions/security-for-github-actions/security-guides/automatic-token-authentication).
 */
import { GraphError, type GraphIssue } from "../graph/errors.ts";
import type { Graph } from "../graph/model.ts";
import { type AppConfig, type GitHubClient, readFileAt, statusOf } from "./client.ts";
import { dispatchInputNames, inputsNotTaken } from "./task-workflow.ts";

/**
 * Whose token asks: the app's installation (the hosted app's), a registered app's token an orchestrator
 * workflow minted (`workflow_app`: only for the repositories it names), a workflow's GITHUB_TOKEN, or
 * another token (a person's).
 */
export type Credentials = "app" | "workflow_app" | "github_token" | "token";

export interface RepositoryReach {
  /** The graph's name for it, and `OWNER/NAME`. */
  name: string;
  fullName: string;
  /** Why the credentials cannot work there, with the fix, in one line; null when they can. */
  problem: string | null;
  /** What the token may do there, when GitHub says (a person's token: push or only pull). */
  access?: "write" | "read";
}

/** The credentials a handler acts with: the app's, or the orchestrator workflow's token. */
export const credentialsOf = (config: AppConfig): Credentials =>
  !config.workflow ? "app" : config.workflow.token === "github_token" ? "github_token" : "workflow_app";

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** Each repository the graph names other than its own (`own`: `OWNER/NAME`), and whether it is reached. */
export async function reachOfRepositories(
  octokit: GitHubClient,
  graph: Graph,
  own: string,
  credentials: Credentials,
  /** With the app: also whether each repository's task workflow (this file) takes what it sends. */
  taskWorkflow?: string,
): Promise<RepositoryReach[]> {
  const others = (graph.repositories ?? []).filter((r) => !same(r.fullName, own));
  return Promise.all(
    others.map(async ({ name, fullName }): Promise<RepositoryReach> => {
      const problem = (line: string) => ({ name, fullName, problem: `${fullName}: ${line}` });
      if (credentials === "github_token")
        return problem(
          `the workflow's GITHUB_TOKEN reaches ${own} only: give the orchestrator a registered GitHub App's token (the variable AGENTRELAY_APP_CLIENT_ID and the secret AGENTRELAY_APP_PRIVATE_KEY, docs/github.md), the app installed on ${fullName} too and the variable AGENTRELAY_REPOSITORIES naming both`,
        );
      const [owner, repo] = fullName.split("/") as [string, string];
      try {
        const { data } = await octokit.rest.repos.get({ owner, repo });
        const permissions = (data as { permissions?: { push?: boolean; pull?: boolean } }).permissions;
        if (permissions && !permissions.push)
          return {
            ...problem(
              "the token may read it but not push to it: give it Contents and Pull requests write there (a fine-grained token's Repository permissions), or use a GitHub App installed on it",
            ),
            access: "read",
          };
        const stale = taskWorkflow
          ? await staleWorkflowAt(octokit, owner, repo, data.default_branch, taskWorkflow)
          : null;
        if (stale) return problem(stale);
        return { name, fullName, problem: null, ...(permissions ? { access: "write" as const } : {}) };
      } catch (error) {
        const status = statusOf(error);
        if (status !== 404 && status !== 403) throw error;
        if (credentials === "token")
          return problem(
            `not found, or the token may not read it: give the token access to it (a fine-grained token's Repository access), or use a GitHub App installed on it`,
          );
        const [ownOwner, ownName] = own.split("/") as [string, string];
        // actions/create-github-app-token mints for the workflow's repository only, unless `owner` and
        // `repositories` name more (its README, "Create a token for multiple repositories"); the
        // template passes the repository variable AGENTRELAY_REPOSITORIES as those.
        if (credentials === "workflow_app")
          return problem(
            same(owner, ownOwner)
              ? `the orchestrator's app token does not reach it: install the registered app on it (the owner's settings, GitHub Apps, Configure, Repository access) and add ${repo} to the repository variable AGENTRELAY_REPOSITORIES of ${own} (comma-separated, with ${ownName}), then push the graph again`
              : `the orchestrator's app token is minted for ${ownOwner}'s repositories only: move the workstream into a repository of ${ownOwner}`,
          );
        if (!same(owner, ownOwner))
          return problem(
            `the app's installation on ${ownOwner} cannot reach ${owner}'s repositories (a run acts through one installation): move the workstream into a repository of ${ownOwner}`,
          );
        return problem(
          `the app is not installed on it: add it to the app's installation (the owner's settings, GitHub Apps, Configure, Repository access), then push the graph again`,
        );
      }
    }),
  );
}

/**
 * Why the app could not dispatch the task workflow `file` of a workstream's repository (it does not
 * take the inputs the app sends: task-workflow.ts), with the fix; null when it can, or when the file is
 * not there to read (its dispatch then fails as GitHub answers it).
 */
async function staleWorkflowAt(
  octokit: GitHubClient,
  owner: string,
  repo: string,
  ref: string,
  file: string,
): Promise<string | null> {
  const path = `.github/workflows/${file}`;
  const text = await readFileAt({ octokit, owner, repo }, path, ref);
  if (text === null) return null;
  const why = inputsNotTaken(path, text, dispatchInputNames({ elsewhere: true, workflowMode: false }));
  return why && `its ${path} is older than this run needs (${why}): run \`agentrelay init\` there and push`;
}

/**
 * Refuses a graph naming a repository the credentials cannot reach, at that repository's line under
 * `repositories`, before anything is written.
 */
export async function requireReach(
  octokit: GitHubClient,
  graph: Graph,
  source: { path: string; text: string },
  own: string,
  credentials: Credentials,
  taskWorkflow?: string,
): Promise<void> {
  if (!graph.repositories?.length) return;
  // With the app, a workstream's task workflow must take what the app sends (without one, the
  // orchestrator workflow's jobs are another matter: app/workflow.ts).
  const workflow = credentials === "app" ? taskWorkflow : undefined;
  const reach = await reachOfRepositories(octokit, graph, own, credentials, workflow);
  const unreachable = reach.filter((r) => r.problem);
  if (unreachable.length === 0) return;
  throw new GraphError(
    unreachable.map((r): GraphIssue => ({
      file: source.path,
      line: repositoryLine(source.text, r.name),
      column: 1,
      path: `repositories.${r.name}`,
      message: r.problem!,
    })),
  );
}

/** The line of `NAME:` under `repositories:` (block style), else of `repositories:` itself. */
export function repositoryLine(text: string, name: string): number {
  const lines = text.split("\n");
  const start = lines.findIndex((l) => /^repositories\s*:/.test(l));
  if (start < 0) return 1;
  const key = new RegExp(`^\\s+['"]?${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}['"]?\\s*:`);
  for (let i = start + 1; i < lines.length && !/^\S/.test(lines[i]!); i++)
    if (key.test(lines[i]!)) return i + 1;
  return start + 1;
}

/** Who starts or steers a run: the event's `sender` (a push's `pusher` is only git's name and email). */
export interface Starter {
  login: string;
  /** GitHub's account type: "User", "Bot" (an app, github-actions), "Organization". */
  type: string;
}

/**
 * Refuses a graph that would write, for someone who may not, to another repository the graph names:
 * the app's installation reaches every repository of its account, so without this anyone who may push
 * a graph to one repository could have a run write to, and auto-merge into, another of them.
 *
 * Each repository other than the graph's own (where pushing the graph already took write access) is
 * asked "Get repository permissions for a user"
 * (https://docs.github.com/en/rest/collaborators/collaborators#get-repository-permissions-for-a-user).
 * That page says each of what this relies on but one: installation tokens may call it with "Metadata"
 * repository permissions (read), which every installation has; `permission` is the legacy base role
 * (`admin`, `write`, `read`, `none`; "the maintain role is mapped to write and the triage role is
 * mapped to read"); and it is "the highest role assigned to the collaborator after considering all
 * sources of grants, including: repo, teams, organization, and enterprise". What a person who is no
 * collaborator gets, it does not say: it lists only 200 and "404 Resource not found". `none` (as a third
 * party measured for a non-collaborator) and 404 are both refused, as `read` is.
 *
 * A bot (an app, github-actions[bot], the agentrelay app's own merges) has no person's access to
 * check: it may start such a run only when AGENTRELAY_ALLOWED_BOTS names it, as for commands. Without
 * a starter (the reconciler carrying out a push whose webhook was lost) nobody is known to have asked:
 * the graph waits for a push that is seen.
 */
export async function requireWriters(
  octokit: GitHubClient,
  graph: Graph,
  source: { path: string; text: string },
  own: string,
  starter: Starter | null,
  allowedBots: readonly string[],
  /** What someone with write access would do instead: "push the graph", "comment the command". */
  instead = "push the graph",
): Promise<void> {
  const others = (graph.repositories ?? []).filter((r) => !same(r.fullName, own));
  if (others.length === 0) return;
  const refusals = await Promise.all(
    others.map(async ({ name, fullName }): Promise<GraphIssue | null> => {
      const refuse = (message: string): GraphIssue => ({
        file: source.path,
        line: repositoryLine(source.text, name),
        column: 1,
        path: `repositories.${name}`,
        message: `${fullName}: ${message}`,
      });
      if (!starter)
        return refuse(
          `who pushed this graph is not known (its push was not seen), so nothing is written there: have someone with write access to ${fullName} push the graph again`,
        );
      if (starter.type === "Bot")
        return allowedBots.includes(starter.login)
          ? null
          : refuse(
              `${starter.login} is an app, whose access to ${fullName} is not a person's: have someone with write access to ${fullName} ${instead}, or name the app in AGENTRELAY_ALLOWED_BOTS`,
            );
      const [owner, repo] = fullName.split("/") as [string, string];
      const permission = await octokit.rest.repos
        .getCollaboratorPermissionLevel({ owner, repo, username: starter.login })
        .then(({ data }) => data.permission)
        .catch((error: unknown) => {
          if (statusOf(error) === 404) return "none";
          throw error;
        });
      if (permission === "admin" || permission === "write") return null;
      return refuse(
        `${starter.login} may not write to it (GitHub says "${permission}"), and the run would: ask for write access to ${fullName}, or have someone with it ${instead}`,
      );
    }),
  );
  const issues = refusals.filter((i): i is GraphIssue => i !== null);
  if (issues.length > 0) throw new GraphError(issues);
}

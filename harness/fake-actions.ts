/**
 * The fake GitHub's answers about Actions and checks beyond the task workflow's runs: the
 * repository's workflows (listed from `.github/workflows/` on the default branch, enabled and
 * disabled through the API: https://docs.github.com/en/rest/actions/workflows#disable-a-workflow,
 * which needs `actions: write`; a disabled workflow starts on no event), the Actions settings
 * (https://docs.github.com/en/rest/actions/permissions#get-default-workflow-permissions-for-a-repository),
 * secrets and variables by name, and a commit's check runs (the app's and the CI's:
 * https://docs.github.com/en/rest/checks/runs#list-check-runs-for-a-git-reference).
 */
import { load } from "js-yaml";
import type { FakeGitHub } from "./fake-github.ts";
import { WORKFLOWS_DIR } from "./fake-repo-settings.ts";

/** The workflows on the default branch: file name, path and the `name:` it gives itself. */
export function repositoryWorkflows(gh: FakeGitHub): { file: string; path: string; name: string }[] {
  const files = gh.store.files(gh.settings.defaultBranch);
  return Object.keys(files)
    .filter((f) => f.startsWith(WORKFLOWS_DIR) && /\.ya?ml$/.test(f))
    .map((path) => {
      let name = path;
      try {
        name = String((load(files[path]!) as { name?: unknown } | null)?.name ?? path);
      } catch {
        // GitHub names a workflow it cannot read by its path.
      }
      return { file: path.slice(WORKFLOWS_DIR.length), path, name };
    });
}

export function actionsRoutes(gh: FakeGitHub): void {
  const { settings } = gh;
  const workflowOf = (id: string) => repositoryWorkflows(gh).find((w) => w.file === id || w.path === id);
  const shown = (w: { file: string; path: string; name: string }, i: number) => ({
    id: 500 + i,
    node_id: `W_${i}`,
    name: w.name,
    path: w.path,
    state: settings.disabledWorkflows.has(w.file) ? "disabled_manually" : "active",
  });
  gh.route("GET", "REPO\\/actions\\/permissions\\/workflow", () => [
    200,
    {
      default_workflow_permissions: "write",
      can_approve_pull_request_reviews: settings.actionsCanCreatePullRequests,
    },
  ]);
  gh.route("GET", "REPO\\/actions\\/workflows", () => {
    const workflows = repositoryWorkflows(gh).map(shown);
    return [200, { total_count: workflows.length, workflows }];
  });
  gh.route("GET", "REPO\\/actions\\/workflows\\/([^/]+)", (m) => {
    const all = repositoryWorkflows(gh);
    const w = workflowOf(m[1]!);
    return w ? [200, shown(w, all.indexOf(w))] : [404, { message: "Not Found" }];
  });
  for (const verb of ["enable", "disable"] as const)
    gh.route("PUT", `REPO\\/actions\\/workflows\\/([^/]+)\\/${verb}`, (m) => {
      const w = workflowOf(m[1]!);
      if (!w) return [404, { message: "Not Found" }];
      if (verb === "disable") settings.disabledWorkflows.add(w.file);
      else settings.disabledWorkflows.delete(w.file);
      return [204];
    });
  gh.route("GET", "REPO\\/actions\\/secrets", () => [
    200,
    {
      total_count: settings.secrets.size,
      secrets: [...settings.secrets].map((name) => ({
        name,
        created_at: "2026-01-01T00:00:00Z",
        updated_at: "2026-01-01T00:00:00Z",
      })),
    },
  ]);
  gh.route("GET", "REPO\\/actions\\/organization-secrets", () => [200, { total_count: 0, secrets: [] }]);
  gh.route("GET", "REPO\\/actions\\/variables", () => [
    200,
    {
      total_count: settings.variables.size,
      variables: [...settings.variables].map(([name, value]) => ({
        name,
        value,
        created_at: "2026-01-01T00:00:00Z",
        updated_at: "2026-01-01T00:00:00Z",
      })),
    },
  ]);
  gh.route("GET", "REPO\\/commits\\/(.+)\\/check-runs", (m, _body, query) => {
    const sha = gh.branches.get(m[1]!) ?? m[1]!;
    const ours = gh.checkRuns
      .filter((c) => c.head_sha === sha)
      .map((c) => ({ ...c, app: { slug: "agentrelay" } }));
    const ci = gh.ciChecks
      .filter((c) => c.sha === sha)
      .map((c, i) => ({
        id: 9000 + i,
        name: c.name,
        head_sha: sha,
        status: c.conclusion === null ? "in_progress" : "completed",
        conclusion: c.conclusion,
        // A check run's output: https://docs.github.com/en/rest/checks/runs#get-a-check-run
        output: {
          title: c.summary === undefined ? null : `${c.name} ${c.conclusion}`,
          summary: c.summary ?? null,
        },
        app: { slug: "github-actions" },
      }));
    // `check_name` keeps the runs of that name.
    const name = query.get("check_name");
    const runs = [...ours, ...ci].filter((c) => !name || c.name === name);
    return [200, { total_count: runs.length, check_runs: runs }];
  });
}

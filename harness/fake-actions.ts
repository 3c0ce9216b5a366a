/**
 * The fake GitHub's answers about Actions and checks beyond the task workflow's runs: the
 * repository's workflows (listed from `.github/workflows/` on the default branch, enabled and
 * disabled through the API: https://docs.github.com/en/rest/actions/workflows#disable-a-workflow,
 * which needs `actions: write`; a disabled workflow starts on no event), the Actions settings
 * (https://docs.github.com/en/rest/actions/permissions#get-default-workflow-permissions-for-a-repository),
 * secrets and variables by name, and a commit's check runs (the app's and the CI's:
 * https://docs.github.com/en/rest/checks/runs#list-check-runs-for-a-git-reference).
 */
import { ACTIONS_BOT_LOGIN } from "./fake-events.ts";
import { load } from "js-yaml";
import { refusedDispatchInputs } from "./fake-dispatch-inputs.ts";
import { GITHUB_ACTIONS_APP_ID, WORKFLOWS_DIR } from "./fake-repo-settings.ts";
import { type AddRoute, Redirect, type Reply } from "./fake-reply.ts";
import type { FakeGitHubState } from "./fake-state.ts";

/** The workflows on the default branch: file name, path and the `name:` it gives itself. */
export function repositoryWorkflows(gh: FakeGitHubState): { file: string; path: string; name: string }[] {
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

/** No commit on any branch for this long: GitHub disables a public repository's scheduled workflows. */
export const INACTIVITY_MS = 60 * 24 * 3_600_000;

/**
 * Whether GitHub has disabled the scheduled workflow `file` for the repository's inactivity (once so,
 * it stays so until enabled through the API or by hand).
 */
export function disabledForInactivity(gh: FakeGitHubState, file: string): boolean {
  const { settings } = gh;
  if (settings.inactiveWorkflows.has(file)) return true;
  if (settings.visibility !== "public" || settings.disabledWorkflows.has(file)) return false;
  const text = gh.store.file(settings.defaultBranch, `${WORKFLOWS_DIR}${file}`) ?? "";
  let scheduled: boolean;
  try {
    const on = (load(text) as { on?: unknown } | null)?.on;
    scheduled = typeof on === "object" && on !== null && "schedule" in on;
  } catch {
    return false;
  }
  const last = Math.max(gh.createdAt, ...gh.history.map((h) => h.at));
  if (!scheduled || gh.clock.now() - last < INACTIVITY_MS) return false;
  settings.inactiveWorkflows.add(file);
  return true;
}

export function actionsRoutes(gh: FakeGitHubState, route: AddRoute): void {
  const { settings } = gh;
  const workflowOf = (id: string) => repositoryWorkflows(gh).find((w) => w.file === id || w.path === id);
  const shown = (w: { file: string; path: string; name: string }, i: number) => ({
    id: 500 + i,
    node_id: `W_${i}`,
    name: w.name,
    path: w.path,
    state: settings.disabledWorkflows.has(w.file)
      ? "disabled_manually"
      : disabledForInactivity(gh, w.file)
        ? "disabled_inactivity"
        : "active",
  });
  // The Actions settings need Administration read, which no GITHUB_TOKEN (nor agentrelay's app) holds
  // (https://docs.github.com/en/rest/actions/permissions#get-default-workflow-permissions-for-a-repository).
  const adminOnly = (answer: () => Reply): Reply =>
    gh.requester === "person" ? answer() : [403, { message: "Resource not accessible by integration" }];
  route("GET", "REPO\\/actions\\/permissions\\/workflow", () =>
    adminOnly(() => [
      200,
      {
        default_workflow_permissions: "write",
        can_approve_pull_request_reviews: settings.actionsCanCreatePullRequests,
      },
    ]),
  );
  // https://docs.github.com/en/rest/actions/permissions#get-github-actions-permissions-for-a-repository
  route("GET", "REPO\\/actions\\/permissions", () =>
    adminOnly(() => [200, { enabled: settings.actionsEnabled, allowed_actions: settings.allowedActions }]),
  );
  route("GET", "REPO\\/actions\\/workflows", () => {
    const workflows = repositoryWorkflows(gh).map(shown);
    return [200, { total_count: workflows.length, workflows }];
  });
  route("GET", "REPO\\/actions\\/workflows\\/([^/]+)", (m) => {
    const all = repositoryWorkflows(gh);
    const w = workflowOf(m[1]!);
    return w ? [200, shown(w, all.indexOf(w))] : [404, { message: "Not Found" }];
  });
  for (const verb of ["enable", "disable"] as const)
    route("PUT", `REPO\\/actions\\/workflows\\/([^/]+)\\/${verb}`, (m) => {
      const w = workflowOf(m[1]!);
      if (!w) return [404, { message: "Not Found" }];
      if (verb === "disable") settings.disabledWorkflows.add(w.file);
      else settings.disabledWorkflows.delete(w.file);
      settings.inactiveWorkflows.delete(w.file);
      return [204];
    });
  route("GET", "REPO\\/actions\\/secrets", () => [
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
  route("GET", "REPO\\/actions\\/organization-secrets", () => [200, { total_count: 0, secrets: [] }]);
  route("GET", "REPO\\/actions\\/variables", () => [
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
  route("GET", "REPO\\/commits\\/(.+)\\/check-runs", (m, _body, query) => {
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
        app:
          c.app === undefined
            ? { id: GITHUB_ACTIONS_APP_ID, slug: "github-actions" }
            : { id: c.app, slug: `app-${c.app}` },
      }));
    // `check_name` keeps the runs of that name.
    const name = query.get("check_name");
    const runs = [...ours, ...ci].filter((c) => !name || c.name === name);
    return [200, { total_count: runs.length, check_runs: runs }];
  });
}

/**
 * The task workflow's runs: a workflow_dispatch (with the run's details where GitHub gives them),
 * the runs, their jobs and steps, their artifacts (downloaded through a redirect), cancelling one,
 * and the app's own check runs, created and updated.
 */
export function workflowRunRoutes(gh: FakeGitHubState, route: AddRoute): void {
  route("POST", "REPO\\/actions\\/workflows\\/([^/]+)\\/dispatches", (m, body) => {
    if (body.return_run_details !== undefined && !gh.runDetails) {
      // GitHub Enterprise Server before the run-details change.
      return [422, { message: 'Invalid request.\n\n"return_run_details" is not a permitted key.' }];
    }
    const inputs = (body.inputs ?? {}) as Record<string, string>;
    // The inputs are checked against the workflow as the dispatch's ref has it (fake-dispatch-inputs.ts).
    const ref = String(body.ref ?? gh.settings.defaultBranch).replace(/^refs\/heads\//, "");
    const refused = refusedDispatchInputs(gh.store.file(ref, `${WORKFLOWS_DIR}${m[1]}`), inputs);
    if (refused) return [422, { message: refused }];
    if (m[1] !== gh.taskWorkflow) {
      // https://docs.github.com/en/rest/actions/workflows#create-a-workflow-dispatch-event
      return gh.onOtherDispatch(m[1]!, inputs)
        ? [204]
        : [422, { message: "Workflow does not have 'workflow_dispatch' trigger" }];
    }
    const runId = gh.newId();
    gh.dispatches.push({ inputs, runId, at: gh.clock.now() });
    gh.workflowRuns.set(runId, {
      id: runId,
      display_title: `agentrelay ${inputs.run} ${inputs.task} attempt ${inputs.attempt}`,
      status: "queued",
      conclusion: null,
      path: `.github/workflows/${m[1]}`,
      event: "workflow_dispatch",
      head_branch: String(body.ref),
      head_repository: { full_name: `${gh.owner}/${gh.repo}` },
      created_at: new Date(gh.clock.now()).toISOString(),
      triggering_actor: {
        login: gh.settings.token === "github_token" ? ACTIONS_BOT_LOGIN : "agentrelay[bot]",
      },
    });
    gh.onDispatch({ inputs, runId });
    return body.return_run_details
      ? [
          200,
          {
            workflow_run_id: runId,
            run_url: `https://api.github.com${gh.base}/actions/runs/${runId}`,
            html_url: `https://github.com/${gh.owner}/${gh.repo}/actions/runs/${runId}`,
          },
        ]
      : [204];
  });
  // A workflow's runs, newest first, of the commit `head_sha` names (runs the fake made without a
  // path are the task workflow's).
  route("GET", "REPO\\/actions\\/workflows\\/([^/]+)\\/runs", (m, _b, q) => {
    const runs = [...gh.workflowRuns.values()]
      .filter((r) => (r.path ?? `.github/workflows/${gh.taskWorkflow}`) === `.github/workflows/${m[1]}`)
      .filter((r) => !q.get("head_sha") || r.head_sha === q.get("head_sha"))
      .reverse();
    return [200, { total_count: runs.length, workflow_runs: runs }];
  });
  route("GET", "REPO\\/actions\\/runs\\/(\\d+)", (m) => {
    const run = gh.workflowRuns.get(Number(m[1]));
    return run ? [200, run] : [404, { message: "Not Found" }];
  });
  route("GET", "REPO\\/actions\\/runs\\/(\\d+)\\/jobs", (m) => {
    const run = gh.workflowRuns.get(Number(m[1]));
    if (!run) return [404, { message: "Not Found" }];
    const jobs = (run.jobs ?? []).map((job, i) => ({
      id: run.id * 10 + i,
      run_id: run.id,
      name: job.name,
      status: run.status,
      conclusion: run.conclusion,
      steps: job.steps.map((step, n) => ({ ...step, number: n + 1, status: "completed" })),
    }));
    return [200, { total_count: jobs.length, jobs }];
  });
  route("GET", "REPO\\/actions\\/runs\\/(\\d+)\\/artifacts", (m, _b, q) => {
    const listed = gh.artifacts
      .filter((a) => a.runId === Number(m[1]) && (!q.get("name") || a.name === q.get("name")))
      .map((a) => ({ id: a.id, name: a.name, size_in_bytes: a.zip.length, expired: false }));
    return [200, { total_count: listed.length, artifacts: listed }];
  });
  // GitHub answers with a redirect to the archive's blob, which the client follows.
  route("GET", "REPO\\/actions\\/artifacts\\/(\\d+)\\/zip", (m) =>
    gh.artifacts.some((a) => a.id === Number(m[1]))
      ? [302, new Redirect(`/_blobs/artifact-${m[1]}`)]
      : [404, { message: "Not Found" }],
  );
  route("POST", "REPO\\/actions\\/runs\\/(\\d+)\\/cancel", (m) => {
    const run = gh.workflowRuns.get(Number(m[1]));
    if (!run || run.status === "completed")
      return [409, { message: "Cannot cancel a workflow run that is completed." }];
    Object.assign(run, { status: "completed", conclusion: "cancelled" });
    gh.onCancel(run.id);
    return [202, {}];
  });
  route("POST", "REPO\\/check-runs", (_m, body) => {
    const run = { id: gh.newId(), ...(body as object) } as FakeGitHubState["checkRuns"][number];
    gh.checkRuns.push(run);
    return [201, { id: run.id }];
  });
  route("PATCH", "REPO\\/check-runs\\/(\\d+)", (m, body) => {
    const run = gh.checkRuns.find((c) => c.id === Number(m[1]))!;
    Object.assign(run, body);
    return [200, { id: run.id }];
  });
}

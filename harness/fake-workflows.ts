/**
 * Workflows of the default branch that the fake runs by their triggers alone, for the conformance
 * suite's Actions cases: no job runs, each run completes at once. A dispatch of a workflow whose file
 * on the default branch listens to workflow_dispatch makes a run
 * (https://docs.github.com/en/rest/actions/workflows#create-a-workflow-dispatch-event: 422 otherwise),
 * and each completed run starts the workflows whose `on.workflow_run` names it, under the fake's event
 * rules (fake-events.ts: no deeper than the docs' example, none for a run GITHUB_TOKEN dispatched).
 */
import { parseWorkflow, type Workflow } from "../src/github/workflow-files.ts";
import { ACTIONS_BOT_LOGIN, type Actor, workflowRunStarts } from "./fake-events.ts";
import type { FakeGitHubState } from "./fake-state.ts";

const DIR = ".github/workflows/";

/** The default branch's workflows (agentrelay's own are the stand-in's to run). */
function workflowsOnMain(gh: FakeGitHubState): Workflow[] {
  const files = gh.store.files(gh.branches.get("main")!);
  return Object.entries(files)
    .filter(([path]) => path.startsWith(DIR) && /\.ya?ml$/.test(path))
    .map(([path, text]) => parseWorkflow({ path, text }));
}

/** Runs `file` for a dispatch by `actor`; false when the default branch has no such dispatchable workflow. */
export function runByTriggers(gh: FakeGitHubState, file: string, actor: Actor): boolean {
  const workflow = workflowsOnMain(gh).find((w) => w.path === `${DIR}${file}`);
  if (!workflow || !("workflow_dispatch" in workflow.on)) return false;
  complete(gh, workflow, "workflow_dispatch", 0, actor);
  return true;
}

function complete(gh: FakeGitHubState, workflow: Workflow, event: string, depth: number, actor: Actor): void {
  const id = gh.newId();
  gh.workflowRuns.set(id, {
    id,
    display_title: workflow.name,
    status: "completed",
    conclusion: "success",
    path: workflow.path,
    event,
    head_branch: "main",
    head_sha: gh.branches.get("main")!,
    head_repository: { full_name: `${gh.owner}/${gh.repo}` },
    created_at: new Date(gh.clock.now()).toISOString(),
    triggering_actor: {
      login: actor === "github_token" ? ACTIONS_BOT_LOGIN : actor === "app" ? "agentrelay[bot]" : "octo",
    },
  });
  for (const next of workflowsOnMain(gh))
    if (
      workflowRunStarts(next.on.workflow_run as { workflows?: string[]; branches?: string[] } | undefined, {
        workflow: workflow.name,
        headBranch: "main",
        depth,
        actor,
      })
    )
      complete(gh, next, "workflow_run", depth + 1, actor);
}

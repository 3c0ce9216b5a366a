/**
 * The orchestrator workflow as `init --no-app` writes it for a repository: its workflow_run trigger
 * names the repository's CI workflows that run on task PRs (GitHub starts no check_suite workflow for
 * GitHub Actions' own check suites, so their completions are how the orchestrator learns that a task
 * PR's checks finished), and its branch filter names the default branch (where task jobs run).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  ciOn,
  parseWorkflow,
  SAMPLE_INTEGRATION_BRANCH,
  type WorkflowFile,
} from "../../github/workflow-files.ts";

/** The workflow files of a checkout (`.github/workflows/*.yml`). */
export function localWorkflowFiles(root: string): WorkflowFile[] {
  const dir = join(root, ".github", "workflows");
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => /\.ya?ml$/.test(n));
  } catch {
    return [];
  }
  return names
    .sort()
    .map((n) => ({ path: `.github/workflows/${n}`, text: readFileSync(join(dir, n), "utf8") }));
}

/** The names of the workflows that run on pull requests into agentrelay's integration branches. */
export function ciWorkflowNames(files: readonly WorkflowFile[]): string[] {
  return ciOn(files.map(parseWorkflow), SAMPLE_INTEGRATION_BRANCH).map((w) => w.name);
}

/** The orchestrator workflow's text with the CI workflows and the default branch of a repository. */
export function withRepositoryTriggers(
  text: string,
  repository: { defaultBranch: string; ci: string[] },
): string {
  return text
    .replace(
      /^(\s+workflows: )\[agentrelay task\]$/m,
      (_, lead: string) =>
        `${lead}[${["agentrelay task", ...repository.ci].map((n) => JSON.stringify(n)).join(", ")}]`,
    )
    .replace(
      /^(\s+branches: )\[main, "agentrelay\/\*\*"\]$/m,
      (_, lead: string) => `${lead}[${JSON.stringify(repository.defaultBranch)}, "agentrelay/**"]`,
    );
}

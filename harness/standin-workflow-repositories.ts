/**
 * Workflow mode across repositories on the stand-in (standin.ts): every repository a graph touches
 * has the no-app workflows installed (`agentrelay init --no-app`) and the registered app's
 * credentials, and each runs its own orchestrator workflow for its own events. As on GitHub:
 * - a workflow's GITHUB_TOKEN reaches its repository only ("The token's permissions are limited to
 *   the repository that contains your workflow":
 *   https://docs.github.com/actions/security-guides/automatic-token-authentication), which the fake
 *   keeps (fake-repositories.ts `workflowToken`);
 * - the orchestrator's token is minted per run by actions/create-github-app-token for the
 *   repositories AGENTRELAY_REPOSITORIES names (its README: "repositories is set: only the specified
 *   repositories"), every repository of the graph in each; a task job's read-only token for the
 *   run's repository is minted for that one;
 * - events start the workflows of the repository they happen in only: a task run's hand-over
 *   dispatches its own repository's orchestrator, and workflow_run is sent "when a workflow run is
 *   requested or completed" to workflows of that repository
 *   (https://docs.github.com/actions/writing-workflows/choosing-when-your-workflow-runs/events-that-trigger-workflows#workflow_run).
 * The orchestrator runs in this process (its code is what the bundled one runs), through a fetch that
 * answers each request as the fake's repositories and tokens do: cheap enough for the suite.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { orchestrate } from "../src/app/workflow.ts";
import { REPORT_SECRET_VARIABLE } from "../src/protocol/report-key.ts";
import { repository, user } from "./app.ts";
import type { FakeGitHub } from "./fake-github.ts";
import type { TokenKind } from "./fake-repo-settings.ts";
import type { FakeRepositories } from "./fake-repositories.ts";
import { OrchestratorRuns } from "./orchestrator-runs.ts";
import { REPO_ROOT } from "./paths.ts";
import { ANTHROPIC_CREDENTIAL, WORKFLOW_TOKEN } from "./standin-jobs.ts";

/** The slug of the registered app the orchestrator workflows act as. */
export const APP_SLUG = "agentrelay-ci";

const key = (fullName: string) => fullName.toLowerCase();
const fullNameOf = (gh: FakeGitHub) => `${gh.owner}/${gh.repo}`;

export class WorkflowRepositories {
  /** Each repository's orchestrator workflow runs, by `owner/name` in lower case (the graph's first). */
  readonly runs = new Map<string, OrchestratorRuns>();
  /** Each repository's workflows' GITHUB_TOKEN. */
  private readonly tokens = new Map<string, string>();
  /** What each orchestrator run logged, in order (a run's failures included). */
  readonly logs: { repository: string; event: string; code: number | null; log: string }[] = [];

  constructor(
    private readonly github: FakeRepositories,
    root: string,
    private readonly token: TokenKind,
  ) {
    for (const gh of github.repositories.values()) {
      const fullName = fullNameOf(gh);
      // The graph's repository's jobs hold the stand-in's one workflow token, as in one repository.
      this.tokens.set(
        key(fullName),
        github.workflowToken(fullName, gh === github.first ? WORKFLOW_TOKEN : undefined),
      );
      gh.settings.token = token;
      gh.settings.appSlug = APP_SLUG;
      if (gh !== github.first) install(gh);
      const runs = new OrchestratorRuns({
        root: join(root, fullName),
        repository: fullName,
        env: () => this.env(gh),
        sha: (event, payload) =>
          event === "push" ? (payload as { after: string }).after : gh.branches.get("main")!,
        workflow: (file) => gh.file("main", `.github/workflows/${file}`),
        execute: (event, payload, env) => this.execute(fullName, event, payload, env),
      });
      this.runs.set(key(fullName), runs);
      if (gh === github.first) continue;
      // The orchestrator workflow dispatched there (a task run's hand-over): that repository's.
      const byTriggers = gh.onOtherDispatch;
      gh.onOtherDispatch = (workflow, inputs) =>
        runs.dispatched(workflow, inputs, {
          sender: user("github-actions[bot]", "Bot"),
          installation: { id: gh.installationId },
          repository: repository(gh),
        }) || byTriggers(workflow, inputs);
    }
  }

  /** Orchestrator runs queued or running, in every repository. */
  get busy(): number {
    return [...this.runs.values()].reduce((n, runs) => n + runs.busy, 0);
  }

  /** The orchestrator workflow runs of the repository an event happened in (`OWNER/NAME`). */
  runsOf(fullName: string | undefined): OrchestratorRuns | undefined {
    return this.runs.get(key(fullName ?? fullNameOf(this.github.first)));
  }

  /** The GITHUB_TOKEN of the workflows of `gh`'s repository. */
  workflowToken(gh: FakeGitHub): string {
    return this.tokens.get(key(fullNameOf(gh)))!;
  }

  /**
   * What the task workflow's step "Read the run where it lives" mints for a job of `gh`: contents read
   * on the run's repository alone (none with GITHUB_TOKEN alone: that step needs the app).
   */
  runToken(gh: FakeGitHub, runRepository: string): string {
    if (this.token !== "app") return "";
    return this.github.mintToken(gh.installationId, [runRepository.split("/")[1]!], { contents: "read" });
  }

  /**
   * AGENTRELAY_REPOSITORIES of a repository: every repository of the graph, the same in each (one
   * organization variable). A workstream's orchestrator carries out what the run owes wherever it
   * acts: a list without a repository would leave that work waiting for the graph's reconciler.
   */
  private names(gh: FakeGitHub): string[] {
    const names = [...this.github.repositories.values()].map((r) => r.repo);
    return [gh.repo, ...names.filter((n) => n !== gh.repo)];
  }

  /** A run's environment, with the token its first step mints (the app's), else its GITHUB_TOKEN. */
  private env(gh: FakeGitHub): Record<string, string> {
    const app = this.token === "app";
    const names = this.names(gh);
    return {
      GITHUB_API_URL: "https://api.github.com",
      GITHUB_REPOSITORY: fullNameOf(gh),
      INPUT_TOKEN: app ? this.github.mintToken(gh.installationId, names) : this.workflowToken(gh),
      ...(app ? { "INPUT_APP-SLUG": APP_SLUG, INPUT_REPOSITORIES: names.join(",") } : {}),
      AGENTRELAY_STATUS_INTERVAL_MS: "0",
      [REPORT_SECRET_VARIABLE]: ANTHROPIC_CREDENTIAL,
      AGENTRELAY_GITHUB_PACING: "off",
    };
  }

  private async execute(fullName: string, event: string, payload: object, env: Record<string, string>) {
    const lines: string[] = [];
    const code = await orchestrate(env, {
      fetch: this.github.fetch,
      log: (line) => lines.push(line),
      event: { name: event, payload: payload as Record<string, unknown> },
    }).then(
      ({ failed }) => (lines.push(...failed), failed.length > 0 ? 1 : 0),
      (error: unknown) => (lines.push((error as Error).message), 1),
    );
    const log = lines.join("\n");
    this.logs.push({ repository: fullName, event, code, log });
    return { code, log };
  }
}

/** The no-app workflows `init --no-app` writes, committed to a workstream repository's default branch. */
function install(gh: FakeGitHub): void {
  const read = (file: string) => readFileSync(join(REPO_ROOT, "templates/workflows/no-app", file), "utf8");
  const files = Object.fromEntries(
    ["agentrelay.yml", "agentrelay-task.yml", "agentrelay-schedule.yml"].map((f) => [
      `.github/workflows/${f}`,
      read(f),
    ]),
  );
  gh.commit("main", files, "Install agentrelay");
}

/**
 * The stand-in repository's CI, as GitHub runs it on pull requests: a workflow that starts for a PR
 * when GitHub starts workflows for whoever opened or pushed it (not for GITHUB_TOKEN's; held for a
 * person's approval where GitHub does that: fake-events.ts), records its checks on the PR's head,
 * and on its end delivers check_suite (to an app; a workflow is not started for GitHub Actions'
 * suites) and workflow_run. When each PR's checks settled is kept, for the benches' latencies.
 */
import { startsWorkflows } from "./fake-events.ts";
import type { FakeGitHub } from "./fake-github.ts";
import type { FakePull } from "./fake-state.ts";
import type { Timeline } from "./timeline.ts";
import { user } from "./app.ts";
import { matchesFilter } from "../src/github/workflow-files.ts";

export interface CiOptions {
  /** Its workflow's `name:` (what workflow_run names). */
  workflow: string;
  /** The check it reports. */
  check: string;
  durationMs: number;
  /** Other checks its run reports, with their conclusions. */
  also?: { check: string; conclusion: "success" | "failure" }[];
  /** The pull requests' base branches it runs on (its `branches` filter; all by default). */
  branches?: string[];
  conclusion?: (pull: FakePull) => "success" | "failure";
}

/** The CI workflow the stand-in's repository runs on pull requests (a job named as its check). */
export const ciWorkflow = (ci: CiOptions) =>
  [
    `name: ${ci.workflow}`,
    "on:",
    "  pull_request:",
    ...(ci.branches ? [`    branches: [${ci.branches.map((b) => JSON.stringify(b)).join(", ")}]`] : []),
    "jobs:",
    ...[ci.check, ...(ci.also ?? []).map((c) => c.check)].flatMap((check) => [
      `  ${check}:`,
      "    runs-on: ubuntu-latest",
      "    steps:",
      "      - run: npm test",
    ]),
    "",
  ].join("\n");

/** What the CI needs of the stand-in. */
export interface CiHost {
  gh: FakeGitHub;
  timeline: Timeline | null;
  workflowMode: boolean;
  webhook(name: string, payload: object, sender?: object): Promise<void>;
  track(work: Promise<unknown>): void;
}

export class RepositoryCi {
  /** When each PR's checks settled (its CI finished; its opening, where no CI runs on it). */
  readonly checksSettled = new Map<number, number>();
  /** CI runs GitHub holds for a person's approval, by PR number. */
  readonly held = new Map<number, string>();

  constructor(
    private readonly host: CiHost,
    private readonly ci: CiOptions | undefined,
  ) {}

  private get gh(): FakeGitHub {
    return this.host.gh;
  }

  /**
   * The repository's CI on a PR just opened, as GitHub starts it: not for a PR GITHUB_TOKEN opened
   * (held for a person's approval where GitHub does that), then, its run done, its check recorded,
   * check_suite delivered to an app (a workflow is not started for Actions' suites) and workflow_run.
   */
  start(pull: FakePull): void {
    const ci = this.ci;
    const now = this.gh.clock.now();
    if (!ci || (ci.branches && !ci.branches.some((b) => matchesFilter([b], pull.base)))) {
      this.checksSettled.set(pull.number, now);
      return;
    }
    const actor = this.host.workflowMode ? this.gh.settings.token : "app";
    const starts = startsWorkflows("pull_request", actor, {
      approvalForActionsPullRequests: this.gh.settings.approvalForActionsPullRequests,
    });
    if (starts === "no") {
      this.checksSettled.set(pull.number, now);
      return;
    }
    const sha = this.gh.branches.get(pull.head)!;
    this.gh.setCheck(sha, ci.check, null);
    if (starts === "held") {
      this.held.set(pull.number, sha);
      return;
    }
    this.run(pull, sha);
  }

  /** A person presses "Approve workflows to run" on a PR: its held CI runs. */
  approveWorkflows(pull: number): void {
    const sha = this.held.get(pull);
    if (sha === undefined) return;
    this.held.delete(pull);
    this.run(
      this.gh.pulls.find((p) => p.number === pull)!,
      sha,
    );
  }

  private run(pull: FakePull, sha: string): void {
    const ci = this.ci!;
    const finish = () => this.host.track(this.finish(pull, sha, ci));
    if (this.host.timeline) this.host.timeline.at(ci.durationMs, finish);
    else finish();
  }

  private async finish(pull: FakePull, sha: string, ci: CiOptions): Promise<void> {
    const own = ci.conclusion?.(pull) ?? "success";
    this.gh.setCheck(sha, ci.check, own);
    for (const other of ci.also ?? []) this.gh.setCheck(sha, other.check, other.conclusion);
    // The suite's conclusion: the worst of its checks.
    const conclusion = [own, ...(ci.also ?? []).map((c) => c.conclusion)].includes("failure")
      ? "failure"
      : "success";
    this.checksSettled.set(pull.number, this.gh.clock.now());
    const prs = [{ number: pull.number, head: { ref: pull.head, sha }, base: { ref: pull.base } }];
    const id = this.gh.ciChecks.length + 70_000;
    await this.host.webhook(
      "check_suite",
      {
        action: "completed",
        check_suite: {
          id,
          head_branch: pull.head,
          head_sha: sha,
          status: "completed",
          conclusion,
          app: { slug: "github-actions" },
          pull_requests: prs,
        },
      },
      user("github-actions[bot]", "Bot"),
    );
    await this.host.webhook("workflow_run", {
      action: "completed",
      workflow_run: {
        id,
        name: ci.workflow,
        path: ".github/workflows/ci.yml",
        head_branch: pull.head,
        head_sha: sha,
        // The repository the PR's head is in, as GitHub sends it with every run
        // (https://docs.github.com/en/webhooks/webhook-events-and-payloads#workflow_run): task PRs are this one's.
        head_repository: { full_name: `${this.gh.owner}/${this.gh.repo}` },
        event: "pull_request",
        status: "completed",
        conclusion,
        display_title: pull.title,
        pull_requests: prs,
        html_url: `https://github.com/octo/demo/actions/runs/${id}`,
      },
    });
  }
}

/**
 * A run over repository settings as GitHub enforces them (the fake's rules, on by default), without an
 * app, with GITHUB_TOKEN and with a registered app, in simulated time (the stand-in's timeline): each
 * case ends with every PR merged, or says in one line on the status comment (and on the task's check
 * run, where a person must act) what it waits for; never a silent wait. Two tasks in one workstream:
 * two task PRs into its integration branch, one integration PR into main.
 */
import { afterEach, describe, expect, it } from "vitest";
import { chainsGraph } from "../../harness/graphs.ts";
import { e2eAgent } from "../../harness/e2e-agent.ts";
import { disabledForInactivity } from "../../harness/fake-actions.ts";
import type { TokenKind } from "../../harness/fake-repo-settings.ts";
import { type Standin, type StandinOptions, startStandin } from "../../harness/standin.ts";

let standin: Standin | undefined;
afterEach(async () => {
  await standin?.close();
  standin = undefined;
});

const HOUR = 3_600_000;
const RUN = "chains/1";

async function start(token: TokenKind, options: Partial<StandinOptions> = {}): Promise<Standin> {
  standin = await startStandin({
    script: e2eAgent(),
    orchestrator: "workflow",
    jobs: "scripted",
    simulated: {},
    memory: true,
    token,
    ...options,
  });
  return standin;
}

const status = (s: Standin) => s.gh.comments.find((c) => c.body.includes("agentrelay:status"))!.body;
const checkRun = (s: Standin, task: string) =>
  s.gh.checkRuns.find((c) => c.name === `agentrelay / ${task}`)?.output?.summary ?? "";
/** The commits main gained in the run (after the graph was pushed), oldest first. */
const runCommits = (s: Standin) => {
  const log = s.gh.store.log("main");
  return log
    .slice(
      0,
      log.findIndex((c) => c.message === "Add a graph"),
    )
    .reverse();
};
const merged = (s: Standin) => s.gh.pulls.filter((p) => p.merged).length;

/** Pushes the graph and runs to the end; every PR merged, main with both tasks' work. */
async function runsThrough(s: Standin): Promise<void> {
  await s.push({ ".workflow/chains.yaml": chainsGraph(2, 1) });
  expect(await s.runToEnd(RUN, 12 * HOUR)).toBe("succeeded");
  expect(merged(s)).toBe(3);
  for (const task of ["t0", "t1"]) expect(s.gh.file("main", `notes/${task}.md`)).toContain(`task ${task}`);
}

/** A person merges a PR GitHub refuses agentrelay's token (their merge may write workflow files). */
async function personMerges(s: Standin, number: number): Promise<void> {
  s.gh.settings.workflowsPermission = true;
  const [code] = s.gh.handle("PUT", `/repos/octo/demo/pulls/${number}/merge`, { merge_method: "merge" });
  s.gh.settings.workflowsPermission = false;
  expect(code).toBe(200);
  const pull = s.gh.pulls.find((p) => p.number === number)!;
  await s.webhook("pull_request", {
    action: "closed",
    number,
    pull_request: {
      number,
      html_url: `https://github.com/octo/demo/pull/${number}`,
      merged: true,
      head: { ref: pull.head, sha: "0".repeat(40), repo: { full_name: "octo/demo" } },
      base: { ref: pull.base },
    },
  });
}

describe("a run without an app over the repository's merge settings", () => {
  // The merge is the same whoever holds the token (the other cases below use both).
  const token: TokenKind = "github_token";
  const methodCases: [string, (s: Standin) => void, (s: Standin) => void][] = [
    [
      "merge commits off: squashed, one commit per PR",
      (s) => (s.gh.settings.mergeMethods.merge = false),
      (s) =>
        expect(runCommits(s).map((c) => [c.message, c.parents.length])).toEqual([
          ["Integrate workstream ws_0", 1],
        ]),
    ],
    [
      "squash only",
      (s) => Object.assign(s.gh.settings.mergeMethods, { merge: false, rebase: false }),
      (s) => expect(runCommits(s).every((c) => c.parents.length === 1)).toBe(true),
    ],
    [
      "rebase only: the tasks' own commits replayed on main",
      (s) => Object.assign(s.gh.settings.mergeMethods, { merge: false, squash: false }),
      (s) =>
        expect(runCommits(s).map((c) => [c.message, c.parents.length])).toEqual([
          ["t0", 1],
          ["t1", 1],
        ]),
    ],
    [
      "linear history required on main by a ruleset: merge commits into the integration branch, a squash into main",
      (s) => s.gh.settings.rules.push({ pattern: "~DEFAULT_BRANCH", source: "ruleset", linearHistory: true }),
      (s) => {
        expect(runCommits(s).map((c) => c.parents.length)).toEqual([1]);
        const integration = s.gh.store.log("agentrelay/chains/ws_0/integration");
        expect(
          integration.filter((c) => c.message.startsWith("Merge task")).map((c) => c.parents.length),
        ).toEqual([2, 2]);
      },
    ],
    [
      "linear history required on main by branch protection, which the token cannot read: the next method after GitHub's 405",
      (s) => s.gh.settings.rules.push({ pattern: "main", source: "protection", linearHistory: true }),
      (s) => {
        expect(runCommits(s).map((c) => c.parents.length)).toEqual([1]);
        expect(s.gh.calls.filter((c) => c.path.endsWith("/merge") && c.status === 405)).toHaveLength(1);
      },
    ],
  ];

  it.each(methodCases)("%s", async (_, configure, check) => {
    const s = await start(token);
    configure(s);
    await runsThrough(s);
    check(s);
  });
});

describe.each(["github_token", "app"] as TokenKind[])(
  "a run without an app as %s, and workflow files",
  (token) => {
    it("a workflow changed on the default branch mid-run: the integration PR opens as it is, and merges", async () => {
      const s = await start(token);
      await s.push({ ".workflow/chains.yaml": chainsGraph(2, 1) });
      await s.timeline!.run(() => s.gh.dispatches.length > 0);
      // Upgrading agentrelay's own workflows mid-run is enough: no token of agentrelay's may merge it in.
      s.gh.commit("main", { ".github/workflows/ci.yml": "name: CI\non: push\njobs: {}\n" }, "Change CI");
      expect(await s.runToEnd(RUN, 12 * HOUR)).toBe("succeeded");
      expect(merged(s)).toBe(3);
      const logs = s.runs!.runs.map((r) => r.log ?? "").join("\n");
      expect(logs).toContain(
        "agentrelay/chains/ws_0/integration: not brought up to date with main: refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml`",
      );
      expect(s.gh.file("main", ".github/workflows/ci.yml")).toContain("on: push");
    });

    it("a task that edits a workflow: its PR waits for a person, who is told on the status and the check run", async () => {
      const s = await start(token, {
        jobFiles: (task): Record<string, string> =>
          task === "t0" ? { ".github/workflows/t0.yml": "on: push\n" } : {},
      });
      await s.push({ ".workflow/chains.yaml": chainsGraph(2, 1) });
      await s.timeline!.run(() => s.gh.pulls.length > 0 && s.runs!.busy === 0, 2 * HOUR);
      const pr = s.gh.pulls[0]!;
      const line = `#${pr.number} changes .github/workflows/t0.yml, and GitHub lets no token of agentrelay's merge a change to a workflow file: merge it yourself (the run goes on by itself)`;
      expect(status(s)).toContain(`**Waiting for you**: ${line}`);
      expect(checkRun(s, "t0")).toContain(`**Waiting for you**: ${line}`);
      expect(s.outcome(RUN)).toBeNull();
      await personMerges(s, pr.number);
      // The integration PR carries the workflow change into main: a person merges it too.
      await s.timeline!.run(() => s.gh.pulls.some((p) => p.base === "main" && p.state === "open"), 4 * HOUR);
      const integration = s.gh.pulls.find((p) => p.base === "main")!;
      await s.timeline!.run(() => status(s).includes(`#${integration.number} changes`), HOUR);
      await personMerges(s, integration.number);
      expect(await s.runToEnd(RUN, 4 * HOUR)).toBe("succeeded");
    });
  },
);

describe("a run without an app: checks and the Actions settings", () => {
  it("required checks, with a failing check that is not required: merged (a registered app's PRs run CI)", async () => {
    const s = await start("app", {
      ci: {
        workflow: "CI",
        check: "ci",
        durationMs: 180_000,
        also: [{ check: "lint", conclusion: "failure" }],
      },
    });
    s.gh.settings.rules.push({ pattern: "agentrelay/**", source: "ruleset", requiredChecks: ["ci"] });
    await runsThrough(s);
    // Each PR merged once its required check passed, not before: no merge was asked while it ran.
    expect(s.gh.calls.filter((c) => c.path.endsWith("/merge") && c.status !== 200)).toEqual([]);
    expect(s.gh.log(/^GET .*\/check-runs$/).length).toBeGreaterThan(0);
  });

  it("a required check fails on a task PR: the task fails with it, and is retried", async () => {
    let runs = 0;
    const s = await start("app", {
      ci: {
        workflow: "CI",
        check: "ci",
        durationMs: 180_000,
        conclusion: () => (runs++ === 0 ? "failure" : "success"),
      },
    });
    s.gh.settings.rules.push({ pattern: "agentrelay/**", source: "ruleset", requiredChecks: ["ci"] });
    await s.push({ ".workflow/chains.yaml": `max_task_attempts: 2\n${chainsGraph(2, 1)}` });
    expect(await s.runToEnd(RUN, 12 * HOUR)).toBe("succeeded");
    const timeline = (s.gh.state(RUN) as unknown as { timeline: { type: string; detail?: string }[] })
      .timeline;
    expect(timeline.filter((e) => e.type === "task_failed").map((e) => e.detail)).toEqual([
      "merging the task PR failed: the required check ci failed on its PR (will retry)",
    ]);
  });

  it("a required check on PRs GITHUB_TOKEN opens: the wait is said; held runs go once a person approves them", async () => {
    const s = await start("github_token", { ci: { workflow: "CI", check: "ci", durationMs: 180_000 } });
    s.gh.settings.rules.push({ pattern: "agentrelay/**", source: "ruleset", requiredChecks: ["ci"] });
    await s.push({ ".workflow/chains.yaml": chainsGraph(2, 1) });
    await s.timeline!.run(() => s.ci.held.size > 0 && s.runs!.busy === 0, 2 * HOUR);
    const pr = s.gh.pulls[0]!;
    const line = `#${pr.number} waits for the required check ci, which no workflow runs by itself on PRs GITHUB_TOKEN opens: press "Approve workflows to run" on #${pr.number}`;
    expect(status(s)).toContain(`**Waiting for you**: ${line}`);
    expect(checkRun(s, "t0")).toContain(line);
    // Nothing moves by itself (the schedule tries again, and says the same).
    await s.timeline!.run(() => false, 2 * HOUR);
    expect(pr.merged).toBe(false);
    for (;;) {
      for (const n of [...s.ci.held.keys()]) s.ci.approveWorkflows(n);
      await s.timeline!.run(
        () => s.outcome(RUN) !== null || (s.ci.held.size > 0 && s.runs!.busy === 0),
        4 * HOUR,
      );
      if (s.outcome(RUN) !== null) break;
    }
    expect(s.outcome(RUN)).toBe("succeeded");
  });

  it("'Allow GitHub Actions to create and approve pull requests' off: the wait is said, and the run goes on once it is on", async () => {
    const s = await start("github_token");
    s.gh.settings.actionsCanCreatePullRequests = false;
    await s.push({ ".workflow/chains.yaml": chainsGraph(2, 1) });
    await s.timeline!.run(() => false, HOUR);
    expect(s.gh.pulls).toEqual([]);
    expect(status(s)).toContain(
      '**Waiting for you**: GitHub refuses the PR from agentrelay/chains/t0 into agentrelay/chains/ws_0/integration: the orchestrator acts as GITHUB_TOKEN, and the repository does not let it open PRs: turn on Settings, Actions, General, "Allow GitHub Actions to create and approve pull requests" (the run goes on by itself)',
    );
    s.gh.settings.actionsCanCreatePullRequests = true;
    expect(await s.runToEnd(RUN, 2 * HOUR)).toBe("succeeded");
  });

  it("the same setting off does not concern a registered app", async () => {
    const s = await start("app");
    s.gh.settings.actionsCanCreatePullRequests = false;
    await runsThrough(s);
  });

  it("never waits on the schedule in the normal path: every scheduled run dropped, CI required, the run still ends", async () => {
    const s = await start("app", {
      ci: { workflow: "CI", check: "ci", durationMs: 180_000 },
      schedule: { drop: () => true },
    });
    s.gh.settings.rules.push({ pattern: "agentrelay/**", source: "ruleset", requiredChecks: ["ci"] });
    await runsThrough(s);
    expect(s.cron.started).toBe(0);
    expect(s.cron.dropped).toBeGreaterThan(0);
  });

  it("shows on the run's first status comment what doctor finds: CI that skips the integration branches", async () => {
    const s = await start("app", {
      ci: { workflow: "CI", check: "ci", durationMs: 180_000, branches: ["main"] },
    });
    await runsThrough(s);
    expect(status(s)).toContain(
      "Settings: CI workflow `ci.yml` runs on PRs into main but not into `agentrelay/…/integration`, so task PRs get no CI from it: add `agentrelay/**` to its `pull_request` branches",
    );
  });

  it("says on the first status comment that a check required on main needs an approval for each push with GITHUB_TOKEN", async () => {
    const s = await start("github_token", { ci: { workflow: "CI", check: "ci", durationMs: 180_000 } });
    s.gh.settings.rules.push({ pattern: "~DEFAULT_BRANCH", source: "ruleset", requiredChecks: ["ci"] });
    await s.push({ ".workflow/chains.yaml": chainsGraph(2, 1) });
    const comment = () => s.gh.comments.find((c) => c.body.includes("agentrelay:status"));
    await s.timeline!.run(() => comment() !== undefined, HOUR);
    expect(comment()!.body).toContain(
      'Settings: integration PRs are opened and pushed to with GITHUB_TOKEN, whose pull_request runs GitHub holds until a person with write access presses "Approve workflows to run", so the required check ci on main needs that click for every push agentrelay makes (retries, bringing a PR up to date, verifications, repairs): register an app (docs/github.md, Tokens), whose PRs run CI by themselves',
    );
  });

  it("a schedule GitHub disabled after 60 quiet days is enabled again when a run starts, and the run ends", async () => {
    const s = await start("github_token", { schedule: {} });
    s.gh.clock.advance(61 * 24 * HOUR);
    expect(disabledForInactivity(s.gh, "agentrelay-schedule.yml")).toBe(true);
    await s.push({ ".workflow/chains.yaml": chainsGraph(2, 1) });
    await s.timeline!.run(() => s.runs!.runs.some((r) => r.event === "push" && r.state === "done"), HOUR);
    expect(s.gh.settings.inactiveWorkflows.has("agentrelay-schedule.yml")).toBe(false);
    expect(await s.runToEnd(RUN, 12 * HOUR)).toBe("succeeded");
  });

  it("an idle repository runs no scheduled job: the schedule is on only while a run is", async () => {
    const s = await start("github_token");
    await runsThrough(s);
    const started = s.cron.started;
    await s.timeline!.run(() => false, 24 * HOUR);
    expect(s.cron.started).toBe(started);
    expect(s.cron.disabled).toBeGreaterThanOrEqual(95);
  });
});

/**
 * What the app shows people, projected from the run state (never read back as truth): the run's
 * tracking issue and status comments, and one check run per task (and per resolution) on the graph's
 * commit.
 */
import { spendLine, taskSpent, usd } from "../engine/budget.ts";
import { conflictOf, recordsOf } from "../engine/conflicts.ts";
import { plural } from "../engine/progress.ts";
import type { Engine } from "../engine/engine.ts";
import type { EngineEvent, RunState } from "../engine/types.ts";
import type { Graph } from "../graph/model.ts";
import { resolverOf, subjectOf } from "../plan/resolution.ts";
import type { Plan } from "../plan/model.ts";
import { repositoryOfInput, resolutionInput } from "../protocol/resolution.ts";
import { jobUrl, type RepoContext, repoPage } from "./client.ts";
import { findings, readRepoFacts } from "./doctor.ts";
import type { HostedRun } from "./hosted-run.ts";
import { agentText, codeBlock } from "./render.ts";
import { statusComment, type StatusLinks } from "./status-comment.ts";
import { priority, unlessDeferred } from "./write-pacing.ts";

/**
 * Said on every status comment of a run orchestrated by a workflow with its GITHUB_TOKEN: GitHub starts
 * no workflow for what that token does, so CI never runs on the task PRs.
 */
export const GITHUB_TOKEN_NOTICE =
  "The orchestrator acts as this repository's GITHUB_TOKEN, and GitHub starts no workflow for PRs it opens: your CI does not run on task PRs (or, where GitHub holds such runs, not until a person approves them). To have it run, register a GitHub App and set the variable `AGENTRELAY_APP_CLIENT_ID` and the secret `AGENTRELAY_APP_PRIVATE_KEY` (docs/github.md).";

/**
 * Where the status comment's links point: the tracking issue, job pages, the graph file at the run's
 * commit; and its notes, one line each: what GitHub makes the run wait for, what `agentrelay doctor`
 * found in the repository's settings when the run started, and what GITHUB_TOKEN cannot do.
 */
/**
 * The page of an attempt's job: in the repository whose task workflow ran it (its workstream's, for
 * a graph that spans repositories; protocol/resolution.ts), else the graph's.
 */
export function attemptJobUrl(ctx: RepoContext, plan: Plan, input: string, job: string): string {
  const elsewhere = repositoryOfInput(plan, input);
  if (!elsewhere) return jobUrl(ctx, job);
  const [owner, repo] = elsewhere.split("/") as [string, string];
  return jobUrl({ owner, repo }, job);
}

const statusLinks = (ctx: RepoContext, run: HostedRun, plan: Plan): StatusLinks => {
  const notes = [
    ...Object.values(run.github.waits ?? {}).map(
      (w) => `${w.person ? "**Waiting for you**" : "Waiting"}: ${w.line}`,
    ),
    ...(run.github.findings ?? []).map((f) => `Settings: ${f}`),
    ...(ctx.config.workflow?.token === "github_token" ? [GITHUB_TOKEN_NOTICE] : []),
  ];
  return {
    trackingIssue: run.github.trackingIssue,
    job: (job, task) => (task ? attemptJobUrl(ctx, plan, task, job) : jobUrl(ctx, job)),
    graph: repoPage(ctx, `blob/${run.source.commit}/${run.source.path}`),
    ...(notes.length > 0 ? { notice: notes.map((n) => agentText(n, 1_000)).join("\n>\n> ") } : {}),
  };
};

export const trackingMarker = (runKey: string): string => `<!-- agentrelay:run=${runKey} -->`;

/** Opens the run's tracking issue with its status comment; ids are kept in the run. */
export async function openTracking(ctx: RepoContext, run: HostedRun, engine: Engine): Promise<void> {
  const repo = { owner: ctx.owner, repo: ctx.repo };
  if (run.github.trackingIssue === null) {
    const { data } = await ctx.octokit.rest.issues.create({
      ...repo,
      title: `agentrelay run ${run.runKey}`,
      body: [
        trackingMarker(run.runKey),
        `Run ${run.runNumber} of graph \`${run.graph}\` from \`${run.source.path}\` at ${run.source.commit}.`,
        "",
        "Steer it with comments here: `/agentrelay status`, `/agentrelay retry TASK`, `/agentrelay cancel [TASK]`, `/agentrelay reset TASK`.",
      ].join("\n"),
    });
    run.github.trackingIssue = data.number;
  }
  run.github.findings ??= await startFindings(ctx);
  if (run.github.statusComment === null) {
    const { data } = await ctx.octokit.rest.issues.createComment({
      ...repo,
      issue_number: run.github.trackingIssue,
      body: statusComment(engine.plan, run, ctx.now(), statusLinks(ctx, run, engine.plan)),
    });
    run.github.statusComment = data.id;
  }
}

/**
 * What `agentrelay doctor` finds that the orchestrator's own token can read (merge methods and rules,
 * the workflow files; not secrets or Actions settings), for the run's first status comment. A read
 * that fails leaves the findings out: they never stop a run.
 */
async function startFindings(ctx: RepoContext): Promise<string[]> {
  try {
    const facts = await readRepoFacts(ctx.octokit, ctx.owner, ctx.repo, {
      settings: false,
      token: ctx.config.workflow?.token ?? null,
    });
    return findings(facts);
  } catch (error) {
    ctx.log(`the repository's settings could not be read: ${(error as Error).message}`);
    return [];
  }
}

/**
 * The status mirrored on each integration PR that stays open (one merged at once needs none): its
 * comment is created before the state is written, so that its id is kept with the run.
 */
export async function mirrorStatus(ctx: RepoContext, run: HostedRun, engine: Engine): Promise<void> {
  for (const [id, ws] of Object.entries(run.workstreams)) {
    if (ws.status !== "pr_open" || !ws.pr || run.github.workstreamComments[id] !== undefined) continue;
    const created = await unlessDeferred(() =>
      ctx.octokit.rest.issues.createComment({
        owner: ctx.owner,
        repo: ctx.repo,
        issue_number: ws.pr!.number,
        body: statusComment(engine.plan, run, ctx.now(), statusLinks(ctx, run, engine.plan)),
        ...priority("status"),
      }),
    );
    if (!created) return; // the next event mirrors it
    run.github.workstreamComments[id] = created.data.id;
  }
}

/** Edits the status comment on the tracking issue and on each open integration PR. */
export async function editStatus(ctx: RepoContext, run: HostedRun, engine: Engine): Promise<void> {
  const body = statusComment(engine.plan, run, ctx.now(), statusLinks(ctx, run, engine.plan));
  const ids = [
    run.github.statusComment,
    ...Object.entries(run.github.workstreamComments)
      .filter(([ws]) => run.workstreams[ws]?.status === "pr_open")
      .map(([, id]) => id),
  ];
  for (const id of ids) {
    if (id === null) continue;
    const edited = await unlessDeferred(() =>
      ctx.octokit.rest.issues.updateComment({
        owner: ctx.owner,
        repo: ctx.repo,
        comment_id: id,
        body,
        ...priority(run.outcome ? "progress" : "status"),
      }),
    );
    if (!edited) return; // yielded to the run's progress: a later event edits it
  }
  if (run.outcome && run.github.trackingIssue !== null) {
    await ctx.octokit.rest.issues.update({
      owner: ctx.owner,
      repo: ctx.repo,
      issue_number: run.github.trackingIssue,
      state: "closed",
      state_reason: run.outcome === "succeeded" ? "completed" : "not_planned",
    });
  }
}

/** What set a stopped attempt's cap, in words. */
const SCOPE_WORDS = {
  attempt: "its own limit",
  task: "what was left of the task's budget",
  workstream: "its share of the workstream's budget",
  run: "its share of the run's budget",
} as const;

/** An attempt's outcome in words. */
const OUTCOME_WORDS = {
  succeeded: "succeeded",
  failed: "failed",
  timed_out: "timed out",
  cancelled: "cancelled",
} as const;

const CONCLUSION = {
  succeeded: "success",
  failed: "failure",
  timed_out: "timed_out",
  cancelled: "cancelled",
} as const;

/**
 * A task's check run for its attempt `n`: title, summary and conclusion (null before the attempt has a
 * verdict). Its amounts and counts are written as the status comment writes them.
 */
export function taskCheckOutput(
  run: RunState,
  task: string,
  n: number,
  graph: Graph,
  job: string | null,
  /** What the task waits for that only a person can end, in one line. */
  waiting?: string,
  /**
   * Whether the check run's "Re-run" reaches an app that retries the task: GitHub sends
   * `check_run.rerequested` "only to the GitHub App being requested"
   * (https://docs.github.com/en/webhooks/webhook-events-and-payloads#check_run), so without an app
   * server it reaches nobody, and the run says what to comment instead.
   */
  retry: { rerun: boolean; issue: number | null } = { rerun: true, issue: null },
): {
  output: { title: string; summary: string };
  conclusion: (typeof CONCLUSION)[keyof typeof CONCLUSION] | "neutral";
} | null {
  const t = run.tasks[task]!;
  const attempt = t.attempts[n - 1];
  if (!attempt?.outcome) return null;
  const gates = attempt.gates.map((g) => `${g.n}: ${g.passed ? "passed" : "failed"}`).join(", ");
  const givenBack = attempt.givenBack
    ? ` It was stopped by ${SCOPE_WORDS[attempt.capBy ?? "run"]}, not by its own limit: it does not count against the task's attempts, and the task ${t.status === "pending" ? "waits for budget or runs again" : "goes on"}.`
    : "";
  const summary = [
    ...(waiting ? [`**Waiting for you**: ${agentText(waiting, 1000)}`, ""] : []),
    `Attempt ${attempt.n} ${OUTCOME_WORDS[attempt.outcome]}${attempt.reason ? `: ${agentText(attempt.reason, 1000)}` : ""}.${givenBack}${t.attempt > n ? ` Attempt ${t.attempt} is running.` : ""}`,
    ...(attempt.outcome !== "succeeded" && t.attempt === n && !attempt.givenBack
      ? ["", retryLine(task, retry.rerun, retry.issue)]
      : []),
    "",
    `Cost ${usd(attempt.costMicros ?? 0)}${attempt.capMicros != null ? ` of its cap ${usd(attempt.capMicros)}` : ""} (task total ${usd(taskSpent(t))}; run: ${spendLine(run, graph)}), ${plural(attempt.turns ?? 0, "turn")}${gates ? `, gate runs ${gates}` : ""}.`,
    ...(job ? ["", `[The job's log](${job})`] : []),
    ...(attempt.gateOutput ? ["", "### Gate output (end)", ...codeBlock(attempt.gateOutput, 2_000)] : []),
    ...(t.summary ? ["", "### Summary", agentText(t.summary)] : []),
    ...(t.concerns.length ? ["", "### Concerns", ...t.concerns.map((c) => `- ${agentText(c, 500)}`)] : []),
  ].join("\n");
  return {
    output: {
      title: `${task}: attempt ${attempt.n} ${attempt.givenBack ? "stopped by the budget" : OUTCOME_WORDS[attempt.outcome]}`,
      summary,
    },
    // A stopped attempt given back is no verdict on the task's work.
    conclusion: attempt.givenBack ? "neutral" : CONCLUSION[attempt.outcome],
  };
}

/** How a person runs a task again, from its check run. */
function retryLine(task: string, rerun: boolean, issue: number | null): string {
  const where = issue === null ? "the run's tracking issue" : `the tracking issue #${issue}`;
  return rerun
    ? `To run it again: press "Re-run", or comment \`/agentrelay retry ${task}\` on ${where}.`
    : `To run it again: comment \`/agentrelay retry ${task}\` on ${where} ("Re-run" here starts nothing without an agentrelay app: GitHub sends its event only to the app that made this check run).`;
}

/** Creates or updates the task's check run with its latest attempt's verdict. */
export async function taskCheckRun(
  ctx: RepoContext,
  run: HostedRun,
  task: string,
  n: number,
  plan: Plan,
  /** What the task waits for that only a person can end, in one line. */
  waiting?: string,
): Promise<void> {
  const attempt = run.tasks[task]!.attempts[n - 1];
  const job = attempt?.job ? attemptJobUrl(ctx, plan, task, attempt.job) : null;
  // Without an app server (workflow mode), nothing receives the "Re-run" button's event.
  const checked = taskCheckOutput(run, task, n, plan.graph, job, waiting, {
    rerun: !ctx.config.workflow,
    issue: run.github.trackingIssue,
  });
  if (!checked || !attempt?.outcome) return;
  const { output, conclusion } = checked;
  const repo = { owner: ctx.owner, repo: ctx.repo };
  const existing = run.github.checkRuns[task];
  // A verdict someone must act on goes with the run's progress; a success only informs, and yields.
  const urgency = priority(attempt.outcome === "succeeded" ? "view" : "progress");
  if (existing !== undefined) {
    await unlessDeferred(() =>
      ctx.octokit.rest.checks.update({
        ...repo,
        check_run_id: existing,
        status: "completed",
        conclusion,
        ...(job ? { details_url: job } : {}),
        output,
        ...urgency,
      }),
    );
    return;
  }
  const created = await unlessDeferred(() =>
    ctx.octokit.rest.checks.create({
      ...repo,
      name: `agentrelay / ${task}`,
      head_sha: run.source.commit,
      external_id: `${run.runKey}/${task}`,
      status: "completed",
      conclusion,
      ...(job ? { details_url: job } : {}),
      output,
      ...urgency,
    }),
  );
  if (created) run.github.checkRuns[task] = created.data.id;
}

/**
 * A check run for a resolution's verdict (or a verification's, or a repair's), created once (by the
 * writer whose write recorded it).
 */
export async function resolutionCheckRun(
  ctx: RepoContext,
  run: HostedRun,
  engine: Engine,
  fact: Extract<EngineEvent, { type: "resolution_finished" }>,
): Promise<void> {
  const subject = subjectOf(fact);
  const record = recordsOf(run, subject)?.[fact.n - 1];
  if (!record || (record.outcome !== "succeeded" && record.outcome !== "failed")) return;
  const { branch, target, gates } = resolverOf(engine.plan, subject);
  const job = record.job ? attemptJobUrl(ctx, engine.plan, resolutionInput(subject), record.job) : null;
  const cost = `Cost ${usd(record.costMicros ?? 0)}${record.capMicros != null ? ` of its cap ${usd(record.capMicros)}` : ""} (run: ${spendLine(run, engine.plan.graph)}), ${plural(record.turns ?? 0, "turn")}.`;
  const because = record.reason ? `: ${agentText(record.reason, 1000)}` : "";
  const files = conflictOf(run, subject)?.files ?? [];
  const what = {
    resolve: `Resolution ${record.n} of the conflicts between \`${branch}\` and \`${target}\` (${files.length ? agentText(files.map((f) => `\`${f}\``).join(", "), 2_000) : "its files"}) ${record.outcome}${because}.`,
    verify: `Verification ${record.n} of \`${branch}\` as it would land on \`${target}\` (${gates.map((g) => `\`${g}\``).join(", ")}) ${record.outcome === "succeeded" ? "passed" : "failed"}${because}.`,
    repair: `Repair ${record.n} of \`${branch}\`, which failed its gates with \`${target}\`, ${record.outcome}${because}.`,
  }[subject.kind ?? "resolve"];
  const summary = [
    what,
    ...(record.summary && subject.kind ? ["", `The agent: ${agentText(record.summary, 2_000)}`] : []),
    ...(record.output ? ["", "What failed (end):", ...codeBlock(record.output, 3_000)] : []),
    ...(subject.kind === "verify" ? [] : ["", cost]),
    ...(job ? ["", `[The job's log](${job})`] : []),
  ].join("\n");
  const noun = { resolve: "resolution", verify: "verification", repair: "repair" }[subject.kind ?? "resolve"];
  await ctx.octokit.rest.checks.create({
    owner: ctx.owner,
    repo: ctx.repo,
    name: `agentrelay / ${resolutionInput(subject)}`,
    head_sha: run.source.commit,
    external_id: `${run.runKey}/${resolutionInput(subject)}/${record.n}`,
    status: "completed",
    conclusion: CONCLUSION[record.outcome],
    ...(job ? { details_url: job } : {}),
    output: { title: `${resolutionInput(subject)}: ${noun} ${record.n} ${record.outcome}`, summary },
  });
}

/**
 * The status comment's list of what the run waits for, and who must act: a person's part first (spent
 * budgets, failures, conflicts and merges left to a person), then what moves on its own. Every task to
 * do is counted once, under what holds it (engine/holds.ts), so that the counts of the lines add up to
 * the headline's "to do"; each kind of line names five and counts the rest.
 */
import { type Hold, holds, holdKey, mergeWaitsForPerson, waiting } from "../engine/holds.ts";
import { type Breakage, standing } from "../engine/progress.ts";
import { leftToPerson, resolving } from "../engine/conflicts.ts";
import type { RunState, TaskRun } from "../engine/types.ts";
import { reproduce } from "../engine/verification.ts";
import { concernsIn, type LandingStage, landingStage, type MergeBy } from "../engine/landing.ts";
import type { Plan } from "../plan/model.ts";
import { type ResolutionSubject, resolverOf } from "../plan/resolution.ts";
import { agentText, codeBlock, reasonText, rowReason } from "./render.ts";
import { code, count, plural, quoteIds, verb } from "./words.ts";

export interface WaitingLinks {
  /** The page of an attempt's Actions run. */
  job?: (job: string) => string;
}

/** How many items of one kind the list names before it counts the rest. */
export const NAMED = 5;

/** "`a`, `b`, `c`, `d`, `e` and 3 more". */
export const named = (ids: string[], show: (id: string) => string, max = NAMED, separator = ", "): string =>
  ids.slice(0, max).map(show).join(separator) +
  (ids.length > max ? `${separator.trim() === ";" ? ";" : ""} and ${count(ids.length - max)} more` : "");

/**
 * A PR as a link: `#12`, or `octo/api#12` in a graph that spans repositories, where a number alone
 * does not say which repository (the repository is the one in the PR's own URL).
 */
export const prLink = (pr: { number: number; url: string } | null, plan?: Plan): string =>
  pr ? `[${prName(pr, plan)}](${pr.url})` : "its PR";

export function prName(pr: { number: number; url: string }, plan?: Plan): string {
  const repository = plan?.graph.repositories?.length
    ? /\/([^/]+\/[^/]+)\/pull\/\d+$/.exec(pr.url)?.[1]
    : undefined;
  return `${repository ?? ""}#${pr.number}`;
}

/** A root failure by name: "`t12`", "workstream `w`". */
export const breakageName = (b: Breakage): string =>
  "task" in b.root ? code(b.root.task) : `workstream ${code(b.root.workstream)}`;

/** What a root failure is, in a line: "`t12` failed (tests failed)", "workstream `w` failed (…)". */
export const breakageText = (b: Breakage, plan: Plan, max = 160): string => {
  const what = `${breakageName(b)} ${b.text.endsWith("was cancelled") ? "was cancelled" : "failed"}`;
  return b.reason ? `${what} (${quoteIds(rowReason(b.reason, max), plan)})` : what;
};

/** "; 3 tasks to do wait for it": what a line's cause holds, counted once. */
const holdsCount = (n: number, what = "it"): string =>
  n ? `; ${plural(n, "task")} to do ${verb(n, "waits", "wait")} for ${what}` : "";

/** What the run waits for, and who must act, as list lines. */
export function waitingFor(
  plan: Plan,
  state: RunState,
  links: WaitingLinks = {},
  all: Map<string, Hold> = holds(plan, state),
): string[] {
  const lines: string[] = [];
  const now = standing(plan, state);
  const byHold = waiting(plan, state, all);
  const held = (key: string) => byHold.get(key)?.length ?? 0;
  // A finished run waits for nothing: what failed is said as what it is.
  const you = state.outcome ? "**Failed**" : "**Waiting for you**";
  const jobLink = (name: string, job: string | null | undefined) =>
    job && links.job ? `[${name}](${links.job(job)})` : name;

  if (!state.cancelled && !state.outcome) {
    const spent = Object.entries(state.budget?.spent ?? {});
    for (const [scope, message] of spent.slice(0, NAMED)) {
      const n = held(`budget:${scope}`);
      lines.push(
        `- **Waiting for you**: ${quoteIds(message, plan)}${n ? holdsCount(n) : "; what it holds waits first for what is named below"}. \`/agentrelay budget +USD [WORKSTREAM|TASK]\` raises it and goes on.`,
      );
    }
    if (spent.length > NAMED) {
      const rest = spent.slice(NAMED).reduce((n, [scope]) => n + held(`budget:${scope}`), 0);
      lines.push(
        `- **Waiting for you**: ${plural(spent.length - NAMED, "more spent budget")}${holdsCount(rest, "them")}.`,
      );
    }
  }
  if (!state.cancelled && now.breakages.length > 0) {
    const blocked = now.breakages.reduce((n, b) => n + b.blocked.length, 0);
    // One failure with its reason; several by name, the most blocking first (the table has why).
    const one = now.breakages.length === 1;
    const list = named(
      now.breakages.map((b) => {
        const blocks = b.blocked.length ? `blocking ${count(b.blocked.length)}` : "";
        return one
          ? `${breakageText(b, plan, 160)}${blocks ? `, ${blocks}` : ""}`
          : `${breakageName(b)}${blocks ? ` (${blocks})` : ""}`;
      }),
      (line) => line,
    );
    const lead = blocked
      ? `${plural(blocked, "task")} blocked by ${plural(now.breakages.length, "failure")}: `
      : "";
    lines.push(
      `- ${you}: ${lead}${list}${one ? "" : " (why: under Needs attention)"}. \`/agentrelay retry TASK\` runs a failed task again (what it blocks goes on once it merges).`,
    );
  }

  // PRs left for a person, those that hold the most tasks first (then in plan order).
  const most = (key: (id: string) => string) => (a: string, b: string) => held(key(b)) - held(key(a));
  // Task PRs whose conflicts wait for a person.
  const conflicted = plan.order
    .filter((id) => leftToPerson(state.tasks[id]!))
    .sort(most((id) => `pr:task:${id}`));
  for (const id of conflicted.slice(0, NAMED)) {
    const t = state.tasks[id]!;
    const n = held(`pr:task:${id}`);
    lines.push(
      `- **Waiting for you**: ${prLink(t.pr, plan)} (${code(id)}): ${quoteIds(reasonText(t.reason ?? "it has conflicts", 400), plan)}${holdsCount(n)}.`,
    );
  }
  if (conflicted.length > NAMED) {
    const rest = conflicted.slice(NAMED).reduce((n, id) => n + held(`pr:task:${id}`), 0);
    lines.push(
      `- **Waiting for you**: ${plural(conflicted.length - NAMED, "more task PR")} with conflicts (below)${holdsCount(rest, "them")}.`,
    );
  }

  // Integration PRs left for a person: to review and merge, or whose conflicts a person resolves.
  const merges = plan.graph.workstreams
    .map((w) => w.id)
    .filter((w) => mergeWaitsForPerson(plan, state, w))
    .sort(most((w) => `pr:workstream:${w}`));
  for (const wsId of merges.slice(0, NAMED))
    lines.push(mergeLine(plan, state, wsId, held(`pr:workstream:${wsId}`)));
  if (merges.length > NAMED) {
    const rest = merges.slice(NAMED);
    const n = rest.reduce((sum, w) => sum + held(`pr:workstream:${w}`), 0);
    lines.push(
      `- **Waiting for you**: ${plural(rest.length, "more integration PR")} to merge: ${named(rest, (w) => prLink(state.workstreams[w]!.pr, plan), 10)}${holdsCount(n, "them")}.`,
    );
  }

  if (now.unexplained.length > 0)
    lines.push(
      `- ${plural(now.unexplained.length, "task")} blocked: ${named(now.unexplained, (id) => `${code(id)} (${quoteIds(rowReason(state.tasks[id]!.reason ?? "", 120), plan)})`)}.`,
    );

  // What moves on its own: resolutions, jobs, PRs GitHub merges; and what waits its turn behind them.
  const resolutions: string[] = [];
  const resolutionOf = (pr: string, subject: ResolutionSubject, conflict: TaskRun["conflict"]) => {
    const { branch, target } = resolverOf(plan, subject);
    const record = conflict!.resolutions.at(-1)!;
    const files = conflict!.files.length ? ` (${named(conflict!.files, code)})` : "";
    resolutions.push(
      `${pr}: ${jobLink(`attempt ${record.n}`, record.job)} merges ${code(target)} into ${code(branch)}${files}`,
    );
  };
  for (const [wsId, ws] of Object.entries(state.workstreams))
    if (ws.status === "pr_open" && resolving(ws.conflict))
      resolutionOf(prLink(ws.pr, plan), { workstream: wsId }, ws.conflict);
  for (const id of plan.order) {
    const t = state.tasks[id]!;
    if (t.status === "pr_open" && resolving(t.conflict))
      resolutionOf(
        prLink(t.pr, plan),
        { workstream: plan.tasks.get(id)!.workstreamId, task: id },
        t.conflict,
      );
  }
  if (resolutions.length > 0)
    lines.push(
      `- Resolving conflicts (an agent merges, then the PR merges again): ${resolutions.slice(0, NAMED).join("; ")}${resolutions.length > NAMED ? ` and ${count(resolutions.length - NAMED)} more` : ""}.`,
    );
  // Verifications and repairs: the gates on the tree that will land, and an agent fixing what fails there.
  for (const [kind, doing] of [
    ["runs", "Verifying before it lands (its gates on the branch with its target merged in)"],
    ["repairs", "Repairing what fails when it meets its target (an agent, then the gates)"],
  ] as const) {
    const jobs = Object.entries(state.workstreams).flatMap(([wsId, ws]) => {
      const record = ws.verification?.[kind].at(-1);
      return ws.status === "pr_open" && record?.outcome === null
        ? [
            `${prLink(ws.pr, plan)} (${code(wsId)}): ${jobLink(`${kind === "runs" ? "verification" : "repair"} ${record.n}`, record.job)}${thenNote(plan, state, wsId, landingStage(plan, state, wsId))}`,
          ]
        : [];
    });
    if (jobs.length > 0) lines.push(`- ${doing}: ${named(jobs, (x) => x)}.`);
  }
  const running = plan.order.filter((id) => state.tasks[id]!.status === "running");
  if (running.length > 0)
    lines.push(
      `- Waiting for ${plural(running.length, "job")}: ${named(running, (id) => {
        const job = state.tasks[id]!.attempts.at(-1)?.job;
        return job && links.job ? `[${code(id)}](${links.job(job)})` : code(id);
      })}.`,
    );
  const merging = plan.order.filter((id) => {
    const t = state.tasks[id]!;
    return t.status === "pr_open" && !resolving(t.conflict) && !leftToPerson(t);
  });
  const opening = merging.filter((id) => state.tasks[id]!.pr === null);
  // A PR whose conflicts an agent resolved is merged again by the run, not held by checks or reviews.
  const again = merging.filter(
    (id) => state.tasks[id]!.pr !== null && state.tasks[id]!.conflict?.resolutions.length,
  );
  const open = merging.filter((id) => state.tasks[id]!.pr !== null && !again.includes(id));
  if (again.length > 0)
    lines.push(
      `- Merging again once its conflicts were resolved: ${named(again, (id) => prLink(state.tasks[id]!.pr, plan))}.`,
    );
  if (opening.length > 0)
    lines.push(`- Opening ${plural(opening.length, "task PR")}: ${named(opening, code)}.`);
  if (open.length > 0)
    lines.push(
      `- Waiting for ${plural(open.length, "task PR")} to merge (required checks or reviews): ${named(open, (id) => prLink(state.tasks[id]!.pr, plan))}.`,
    );
  // Where each other integration PR stands (engine/landing.ts): in the queue to be verified, or merging itself.
  const stages = plan.graph.workstreams.map((w) => [w.id, landingStage(plan, state, w.id)] as const);
  const inTurn = stages.filter(([, st]) => st?.stage === "in_turn");
  // Landings into one target go one at a time: one not verified yet waits for the one before it.
  if (inTurn.length > 0)
    lines.push(
      `- Waiting their turn to be verified (one landing into a branch at a time): ${named(
        inTurn.map(
          ([wsId, st]) => `${prLink(state.workstreams[wsId]!.pr, plan)}${thenNote(plan, state, wsId, st)}`,
        ),
        (link) => link,
      )}.`,
    );
  const selfMerging = stages.filter(([, st]) => st?.stage === "merging");
  if (selfMerging.length > 0)
    lines.push(
      `- Waiting for GitHub: ${named(
        selfMerging.map(([wsId]) => prLink(state.workstreams[wsId]!.pr, plan)),
        (link) => link,
      )} ${verb(selfMerging.length, "merges itself", "merge themselves")} once required checks pass.`,
    );
  // Tasks a serialised overlap holds: what they wait for to land, and why.
  const overlaps = [...byHold].filter(([key]) => key.startsWith("overlap:"));
  if (overlaps.length > 0) {
    const n = overlaps.reduce((sum, [, ids]) => sum + ids.length, 0);
    lines.push(
      `- ${plural(n, "task")} to do ${verb(n, "waits", "wait")} for an overlapping workstream to land (\`overlaps: serialize\`): ${named(
        overlaps.map(([key, ids]) => `${named(ids, code, 3)} for ${code(key.slice("overlap:".length))}`),
        (x) => x,
        NAMED,
        "; ",
      )}.`,
    );
  }
  const turn = held(holdKey({ kind: "turn" }));
  if (turn > 0)
    lines.push(
      `- ${plural(turn, "task")} to do ${verb(turn, "waits its", "wait their")} turn behind work that moves on its own.`,
    );
  return lines;
}

/** A line for an integration PR left to a person: why, how many tasks wait for it, what else to do. */
function mergeLine(plan: Plan, state: RunState, wsId: string, n: number): string {
  const ws = state.workstreams[wsId]!;
  const def = plan.workstreams.get(wsId)!;
  const pr = `${prLink(ws.pr, plan)} (${code(wsId)} into ${code(def.mergeTargetBranch)})`;
  if (ws.conflict?.toPerson)
    return `- **Waiting for you**: ${pr}: ${quoteIds(reasonText(ws.reason ?? "it has conflicts", 400), plan)}${holdsCount(n)}.`;
  // Verified and repaired in vain: why, how to see it, and the end of what fails.
  const v = ws.verification;
  if (v?.toPerson)
    return [
      `- **Waiting for you**: ${pr}: ${quoteIds(agentText(ws.reason ?? "not verified", 400), plan)}; to see it: ${code(agentText(reproduce(plan, wsId, "origin"), 600))}${holdsCount(n)}. Fix it on its branch, or close it to fail the workstream.`,
      ...(v.failure ? ["  What fails (end):", ...codeBlock(v.failure, 1_500).map((l) => `  ${l}`)] : []),
    ].join("\n");
  const stage = landingStage(plan, state, wsId);
  const by = stage?.stage === "merge" ? stage.by : null;
  const why =
    by === "auto_merge_off" || by === "concern"
      ? mergeByWords(plan, state, wsId, by)
      : quoteIds(agentText(ws.reason ?? "the automatic merge did not happen", 300), plan);
  const verified = ws.verification?.passed ? " (verified)" : "";
  return `- **Waiting for you**: merge ${pr}${verified}; ${why}${holdsCount(n)}. Close it instead to fail the workstream.`;
}

/** Why a PR that may land waits for a person to merge it: "`auto_merge` is off …", "a design concern …". */
export function mergeByWords(plan: Plan, state: RunState, wsId: string, by: MergeBy): string {
  if (by === "auto_merge_off") return "`auto_merge` is off for this workstream";
  if (by === "concern") return `a design concern was raised in ${named(concernsIn(plan, state, wsId), code)}`;
  return quoteIds(
    agentText(state.workstreams[wsId]!.reason ?? "the automatic merge did not happen", 300),
    plan,
  );
}

/** " (then it waits for you: …)": what will keep a PR still to be verified from merging itself. */
function thenNote(plan: Plan, state: RunState, wsId: string, stage: LandingStage | null): string {
  const then = stage && "then" in stage ? stage.then : null;
  return then ? ` (then it waits for you: ${mergeByWords(plan, state, wsId, then)})` : "";
}

/** A pending task's hold in a few words, for its row: "waits for #12", "waits for budget". */
export function holdWords(plan: Plan, state: RunState, hold: Hold | undefined): string {
  if (!hold) return "";
  if (hold.kind === "budget") return "waits for budget";
  if (hold.kind === "overlap")
    return `waits for ${code(hold.workstream)} to land (an overlap with ${code(hold.task)})`;
  if (hold.kind !== "person") return "";
  const pr = "task" in hold.pr ? state.tasks[hold.pr.task]!.pr : state.workstreams[hold.pr.workstream]!.pr;
  return `waits for ${prLink(pr, plan)}`;
}

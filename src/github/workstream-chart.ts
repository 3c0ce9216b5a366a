/**
 * The status comment's picture of the run: a mermaid chart while its text stays readable (task by
 * task, or one node per workstream), else a compact table of the workstreams, one row each. A node's
 * outline says who must act (a legend under the chart says so too): its own failure is red, what
 * waits for a person (a merge, a conflict, a spent budget) is amber, what another's failure blocks is
 * grey and dashed, work under way is blue, what merged is green.
 */
import { type Root, rootCauses } from "../engine/blocking.ts";
import { leftToPerson } from "../engine/conflicts.ts";
import { type Hold, holds as holdsOf } from "../engine/holds.ts";
import { landingStage } from "../engine/landing.ts";
import { STATUS_WORDS, WORKSTREAM_WORDS } from "../engine/progress.ts";
import type { RunState, TaskStatus } from "../engine/types.ts";
import { type Mark, type Marks, mermaidChart } from "../plan/mermaid.ts";
import type { Plan } from "../plan/model.ts";
import { agentText, cell, rowReason } from "./render.ts";
import { mergeByWords, named, prLink, prName } from "./waiting-lines.ts";
import { cellCode, count, plural, quoteIds, verb } from "./words.ts";

/** Says what the outlines mean, under every chart. */
export const LEGEND =
  "Outlines: red, failed (retry it); amber, waits for you (a merge, a conflict or the budget); grey and dashed, blocked by a failure elsewhere; blue, at work; green, merged.";

/** A workstream's tasks counted by status, in the order of STATUS_WORDS. */
function tally(plan: Plan, state: RunState, ws: string): Map<TaskStatus, number> {
  const counts = new Map<TaskStatus, number>();
  for (const id of plan.tasksByWorkstream.get(ws) ?? [])
    counts.set(state.tasks[id]!.status, (counts.get(state.tasks[id]!.status) ?? 0) + 1);
  return new Map(
    (Object.keys(STATUS_WORDS) as TaskStatus[]).filter((s) => counts.has(s)).map((s) => [s, counts.get(s)!]),
  );
}

/** What a workstream needs to be told: the root of its failure, and what its tasks wait for. */
interface Known {
  roots: { tasks: Map<string, Root>; workstreams: Map<string, Root> };
  holds: Map<string, Hold>;
}

/** The root of a workstream's failure when it lies in another workstream: it is blocked, not failed. */
function blockedBy(plan: Plan, known: Known, wsId: string): Root | null {
  const root = known.roots.workstreams.get(wsId);
  if (!root) return null;
  return "task" in root && plan.tasks.get(root.task)!.workstreamId === wsId ? null : root;
}

/** What a person must do for a workstream, in a few words (null: nothing). */
function forYou(plan: Plan, state: RunState, known: Known, wsId: string, short: boolean): string | null {
  const ws = state.workstreams[wsId]!;
  // As the lines say it (engine/landing.ts): merge it only once it may land.
  const landing = landingStage(plan, state, wsId);
  if (landing?.stage === "conflict")
    return short ? "its PR conflicts" : `its PR ${prLink(ws.pr, plan)} waits for you: it conflicts`;
  if (landing?.stage === "unverified")
    return short
      ? "not verified, waits for you"
      : `its PR ${prLink(ws.pr, plan)} is not verified: fix it on its branch, or close it`;
  if (landing?.stage === "merge")
    return short ? "merge waits for you" : `its PR ${prLink(ws.pr, plan)} waits for you: merge it`;
  const ids = plan.tasksByWorkstream.get(wsId) ?? [];
  const conflicted = ids.filter((id) => leftToPerson(state.tasks[id]!));
  if (conflicted.length > 0)
    return short
      ? `${conflicted.length === 1 ? "a PR" : `${count(conflicted.length)} PRs`} conflict`
      : `${named(conflicted, (id) => `${prLink(state.tasks[id]!.pr, plan)} (${cellCode(id)})`, 3)} ${verb(conflicted.length, "waits", "wait")} for you: conflicts`;
  // Its tasks to do wait for another's PR, or for a budget.
  const pending = ids.filter((id) => state.tasks[id]!.status === "pending");
  const person = pending.map((id) => known.holds.get(id)).find((h) => h?.kind === "person");
  if (person?.kind === "person") {
    const pr =
      "task" in person.pr ? state.tasks[person.pr.task]!.pr : state.workstreams[person.pr.workstream]!.pr;
    return short ? `waits for ${pr ? prName(pr, plan) : "#?"}` : `its tasks wait for ${prLink(pr, plan)}`;
  }
  const budget = pending.filter((id) => known.holds.get(id)?.kind === "budget").length;
  if (budget > 0)
    return short
      ? "waits for budget"
      : `${plural(budget, "task")} ${verb(budget, "waits", "wait")} for budget`;
  return null;
}

/**
 * A workstream's state in words, as its heading and its row say it: what broke in it (or elsewhere,
 * for one only blocked), then what waits for a person.
 */
export function workstreamState(
  plan: Plan,
  state: RunState,
  wsId: string,
  known: Known = { roots: rootCauses(plan, state), holds: holdsOf(plan, state) },
  max = 200,
): string {
  const ws = state.workstreams[wsId]!;
  const parts: string[] = [];
  const other = blockedBy(plan, known, wsId);
  if (ws.failedItself)
    parts.push(`failed: ${cell(quoteIds(rowReason(ws.reason ?? "", max), plan, cellCode))}`);
  else if (other)
    parts.push(
      "task" in other
        ? `blocked by ${cellCode(other.task)} (in ${cellCode(plan.tasks.get(other.task)!.workstreamId)})`
        : `blocked by workstream ${cellCode(other.workstream)}`,
    );
  else {
    const ids = plan.tasksByWorkstream.get(wsId) ?? [];
    const broken = ids.filter((id) => ["failed", "cancelled"].includes(state.tasks[id]!.status));
    // What its own failures block here (a task blocked from elsewhere is not theirs to count).
    const own = new Set(broken);
    const blocked = ids.filter((id) => {
      const root = known.roots.tasks.get(id);
      return (
        state.tasks[id]!.status === "blocked" && root !== undefined && "task" in root && own.has(root.task)
      );
    }).length;
    if (broken.length > 0)
      parts.push(
        `${named(broken, cellCode, 3)} failed${blocked ? `, ${plural(blocked, "task")} blocked` : ""}`,
      );
  }
  const person = forYou(plan, state, known, wsId, false);
  if (person) parts.push(person);
  else {
    const landing = landingStage(plan, state, wsId);
    const then = landing && "then" in landing ? landing.then : null;
    if (landing?.stage === "in_turn" || landing?.stage === "verifying")
      parts.push(
        `its PR ${prLink(ws.pr, plan)} ${landing.stage === "in_turn" ? "waits its turn to be verified" : `is in ${landing.job}`}${then ? `, then waits for you: ${mergeByWords(plan, state, wsId, then)}` : ""}`,
      );
  }
  if (ws.landedUnverified)
    parts.push(`${WORKSTREAM_WORDS[ws.status]}, unverified: ${cell(agentText(ws.landedUnverified, max))}`);
  return parts.length ? parts.join("; ") : WORKSTREAM_WORDS[ws.status];
}

function marks(plan: Plan, state: RunState, all: Map<string, Hold>): { tasks: Marks; workstreams: Marks } {
  const known: Known = { roots: rootCauses(plan, state), holds: all };
  const taskMark = (id: string): Mark => {
    const t = state.tasks[id]!;
    if (t.status === "failed" || t.status === "cancelled") return "broken";
    if (t.status === "blocked") return "blocked";
    if (leftToPerson(t)) return "waiting";
    if (t.status === "running" || t.status === "pr_open") return "active";
    if (t.status === "merged" || t.status === "completed") return "done";
    return all.get(id)?.kind === "budget" ? "waiting" : null;
  };
  return {
    tasks: {
      label: (id) =>
        leftToPerson(state.tasks[id]!) ? "waits for you" : STATUS_WORDS[state.tasks[id]!.status],
      mark: taskMark,
    },
    workstreams: {
      // Short, so that more fit side by side: "3/25 done, 1 failed, 21 blocked".
      label: (ws) => {
        const counts = tally(plan, state, ws);
        const total = [...counts.values()].reduce((a, b) => a + b, 0);
        const done = (counts.get("merged") ?? 0) + (counts.get("completed") ?? 0);
        const n = (status: TaskStatus, word: string) =>
          counts.get(status) ? `${count(counts.get(status)!)} ${word}` : "";
        const atWork = (counts.get("running") ?? 0) + (counts.get("pr_open") ?? 0);
        const parts = [
          `${count(done)}/${count(total)} done`,
          n("failed", "failed"),
          n("cancelled", "cancelled"),
          n("blocked", "blocked"),
          atWork ? `${count(atWork)} at work` : "",
          forYou(plan, state, known, ws, true) ?? "",
        ];
        return parts.filter(Boolean).join(", ");
      },
      // Its own failure first, then a person's part, then another's failure.
      mark: (ws) => {
        const w = state.workstreams[ws]!;
        const other = blockedBy(plan, known, ws);
        if (w.status === "failed" && !other) return "broken";
        if (forYou(plan, state, known, ws, true)) return "waiting";
        if (w.status === "failed") return "blocked";
        if (w.status === "merged") return "done";
        return w.status === "active" || w.status === "pr_open" || w.status === "merge_ready"
          ? "active"
          : null;
      },
    },
  };
}

/** The workstreams as a table: what a chart could not show readably. */
function workstreamTable(plan: Plan, state: RunState, all: Map<string, Hold>): string[] {
  const known: Known = { roots: rootCauses(plan, state), holds: all };
  return [
    "| Workstream | State | Done | Running or open | Failed | Blocked | To do |",
    "|---|---|---|---|---|---|---|",
    ...[...plan.workstreams.keys()].map((ws) => {
      const c = tally(plan, state, ws);
      const n = (...statuses: TaskStatus[]) => {
        const sum = statuses.reduce((a, s) => a + (c.get(s) ?? 0), 0);
        return sum ? count(sum) : "";
      };
      const total = (plan.tasksByWorkstream.get(ws) ?? []).length;
      return `| ${cellCode(ws)} | ${workstreamState(plan, state, ws, known, 80)} | ${n("merged", "completed") || 0} of ${count(total)} | ${n("running", "pr_open")} | ${n("failed", "cancelled")} | ${n("blocked")} | ${n("pending")} |`;
    }),
  ];
}

/** The chart (or table) section of the status comment, folded. */
export function workstreamChart(
  plan: Plan,
  state: RunState,
  graphLink?: string,
  all: Map<string, Hold> = holdsOf(plan, state),
): string[] {
  const chart = mermaidChart(plan, marks(plan, state, all));
  const fullGraph = graphLink ? `[The graph file](${graphLink}) has every task.` : "";
  if (chart.text === null)
    return [
      "",
      `<details><summary>Workstreams (${count(plan.workstreams.size)}; too many to draw readably)</summary>`,
      "",
      ...workstreamTable(plan, state, all),
      ...(fullGraph ? ["", fullGraph] : []),
      "",
      "</details>",
    ];
  const title = chart.level === "tasks" ? "DAG" : `Workstreams (${chart.why})`;
  return [
    "",
    `<details><summary>${title}</summary>`,
    "",
    "```mermaid",
    chart.text,
    "```",
    "",
    `_${LEGEND}_`,
    ...(chart.level === "workstreams" && fullGraph ? ["", fullGraph] : []),
    "",
    "</details>",
  ];
}

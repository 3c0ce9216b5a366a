/**
 * What people read on GitHub, as pure functions of the plan and the run state: the run status
 * comment, task and integration PR bodies, the plan comment and check-run outputs. Text an agent
 * wrote (summaries, concerns) is redacted and kept inside markdown that cannot run anything.
 */
import { agentText, cut, cutClauses, inertOnGitHub, redactor } from "../attempt/redact.ts";
import { type GraphIssue, printable } from "../graph/errors.ts";
import { integrationBranch, repositoryFullName, taskBranch, type Task, thousands } from "../graph/model.ts";
import { mermaidChart } from "../plan/mermaid.ts";
import { overlapLines, overlapsOf } from "../plan/overlaps.ts";
import { unitGatesNote } from "../plan/resolution.ts";
import type { Plan } from "../plan/model.ts";
import { budgetsText, usd } from "../engine/budget.ts";
import { holdKey, waiting } from "../engine/holds.ts";
import { concernsIn, landingStage } from "../engine/landing.ts";
import { firstDispatches } from "../engine/preview.ts";
import type { RunState, TaskRun } from "../engine/types.ts";
import { cellCode, code, count, plural, quoteIds, verb } from "./words.ts";

/** GitHub refuses comment and check-run bodies over 65,536 characters. */
export const BODY_LIMIT = 65_536;
const scrub = redactor([]);
export { agentText, cut };

/**
 * A reason that says what a person must do ("merge `x` into `y` by hand: they conflict in …"), within
 * `max` characters: cut only where a clause ends (redact.ts's cutClauses), never inside its list of
 * files or a code span, so that what to do and why stay whole or go whole.
 */
export const reasonText = (reason: string, max: number): string => cutClauses(agentText(reason), max);

/**
 * Why a task or a workstream failed, in a table row, within `max` characters: cut where a clause ends,
 * as a conflict's reason is, when that keeps at least half of `max` ("…: `npm test` exited 1 …", not
 * "…; the last lines said AssertionError: …"); cut at a word when the clauses that fit are shorter
 * (a bare "Completion gate failed …" would drop the command that failed). Never inside a code span.
 */
export const rowReason = (reason: string, max: number): string => cutClauses(agentText(reason), max, max / 2);

/**
 * An agent's words in a PR body we write: as agentText, with its closing keywords and issue references
 * broken as in a repair's commit (attempt/redact.ts), since a merged PR closes the issues its body
 * says it closes ("Closes #1" in a summary would close issue 1 when the PR lands).
 */
const prWords = (text: string, max?: number): string => inertOnGitHub(agentText(text, max));

/**
 * Output (a gate's) as a code block people can copy from: secrets masked, nothing else changed (no
 * zero-width space: a mention in a code block notifies no one), fenced with more backticks than it
 * holds in a row; when longer than `max`, its first lines are left out (it is the end that matters).
 */
export function codeBlock(text: string, max: number, language = "text"): string[] {
  let clean = scrub(text);
  if (clean.length > max) {
    const tail = clean.slice(clean.length - max);
    const line = tail.indexOf("\n");
    clean = `…\n${line >= 0 ? tail.slice(line + 1) : tail}`;
  }
  const fence = "`".repeat(Math.max(3, ...[...clean.matchAll(/`+/g)].map((m) => m[0].length + 1)));
  return [`${fence}${language}`, clean, fence];
}

/** Text inside a markdown table cell: a pipe escaped, lines joined. */
export const cell = (text: string): string => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

export const statusMarker = (runKey: string): string => `<!-- agentrelay:status run=${runKey} -->`;
export const PLAN_MARKER = "<!-- agentrelay:plan -->";

/**
 * As many whole lines as fit in `budget` characters, then a line saying how many were left out: a
 * table keeps its rows whole and a list its items.
 */
export function takeLines(lines: string[], budget: number, more: (left: number) => string): string[] {
  let size = 0;
  for (const [i, line] of lines.entries()) {
    if (size + line.length + 1 > budget - 120) return [...lines.slice(0, i), more(lines.length - i)];
    size += line.length + 1;
  }
  return lines;
}

function describe(task: Task): string {
  if (!task.description) return `${task.id} (${task.role.replace(/_/g, " ")})`;
  return cut(task.description, 200);
}

export function taskPrTitle(task: Task): string {
  const first = (task.description ?? task.role.replace(/_/g, " ")).split("\n")[0]!.trim();
  return `agentrelay: ${task.id}: ${cut(first, 80)}`;
}

export function taskPrBody(
  plan: Plan,
  state: RunState,
  taskId: string,
  jobUrl: (job: string) => string = () => "",
  /** The run's tracking issue, where it is followed (in the graph's repository). */
  runUrl: string | null = null,
): string {
  const task = plan.tasks.get(taskId)!;
  const t = state.tasks[taskId]!;
  const job = t.attempts[t.attempt - 1]?.job;
  const ranIn = job ? ` ([its job](${jobUrl(job)}))` : "";
  const ofRun = runUrl ? `[${code(state.runKey)}](${runUrl})` : code(state.runKey);
  const lines = [
    `<!-- agentrelay:task run=${state.runKey} task=${taskId} -->`,
    `Task ${code(taskId)} of run ${ofRun}, workstream ${code(task.workstreamId)}, attempt ${t.attempt}${ranIn}.`,
    "",
    `> ${describe(task).replace(/\n/g, "\n> ")}`,
    "",
    "## Summary",
    t.summary ? prWords(t.summary) : "_The agent left no summary._",
  ];
  if (t.concerns.length) lines.push("", "## Concerns", ...t.concerns.map((c) => `- ${prWords(c, 500)}`));
  if (t.opsConcerns.length)
    lines.push("", "## Ops Concerns", ...t.opsConcerns.map((c) => `- ${prWords(c, 500)}`));
  if (t.outputs.length)
    lines.push(
      "",
      "## Outputs",
      ...t.outputs.map((o) => `- \`${agentText(o.path, 200)}\` (${o.action}, ${o.category})`),
    );
  return lines.join("\n");
}

/** What the integration PR's reader is to do with it, and why the app does or does not merge it. */
function mergingNote(plan: Plan, state: RunState, workstream: string): string {
  const ws = plan.workstreams.get(workstream)!;
  const concerns = concernsIn(plan, state, workstream).length > 0;
  // Counted as the status comment counts them: each task to do once, under what holds it.
  const waits = waiting(plan, state).get(holdKey({ kind: "person", pr: { workstream } }))?.length ?? 0;
  // Offered to a person only once it may land (engine/landing.ts): verified first where verification is on.
  const stage = landingStage(plan, state, workstream)?.stage;
  const first = stage === "in_turn" || stage === "verifying";
  const yours = `${first ? "once verified, " : ""}review it, then merge it (the run goes on) or close it (the workstream fails).`;
  const note =
    ws.autoMerge && !concerns
      ? `\`auto_merge\` is on: the app merges this PR once ${first ? "it is verified and " : ""}its required checks pass.`
      : ws.autoMerge
        ? `An agent raised a design concern (below), so the app leaves this PR for you: ${yours}`
        : `\`auto_merge\` is off for this workstream, so this PR waits for you: ${yours}`;
  return waits
    ? `${note} ${plural(waits, "task")} of the run ${verb(waits, "waits", "wait")} for this merge.`
    : note;
}

/**
 * agentrelay's integration PR body: summary line, what to do with it, the concerns agents raised,
 * then the tasks with their PRs and summaries; within `budget` characters (concerns get half first;
 * a summary left out is left to its task PR).
 */
export function integrationPrBody(
  plan: Plan,
  state: RunState,
  workstream: string,
  budget = BODY_LIMIT - 1000,
  /** The run's tracking issue (in the graph's repository, which may be another). */
  runUrl: string | null = null,
): string {
  const ws = plan.workstreams.get(workstream)!;
  const ids = plan.tasksByWorkstream.get(workstream) ?? [];
  const ofRun = runUrl ? ` of run [${code(state.runKey)}](${runUrl})` : "";
  const head = [
    `<!-- agentrelay:integration run=${state.runKey} workstream=${workstream} -->`,
    "## Summary",
    `Integrates workstream ${code(workstream)}${ofRun} (${code(integrationBranch(state.graph, workstream))}) into ${code(ws.mergeTargetBranch)}.`,
    "",
    mergingNote(plan, state, workstream),
  ];
  const concerns: string[] = [];
  for (const [title, pick] of [
    ["Concerns", (t: TaskRun) => t.concerns],
    ["Ops Concerns", (t: TaskRun) => t.opsConcerns],
  ] as const) {
    const withAny = ids.filter((id) => pick(state.tasks[id]!).length > 0);
    if (withAny.length === 0) continue;
    concerns.push("", `## ${title}`);
    for (const id of withAny)
      concerns.push(`### ${id}`, ...pick(state.tasks[id]!).map((c) => `- ${prWords(c, 500)}`));
  }
  let room = budget - head.join("\n").length;
  const shownConcerns = takeLines(
    concerns,
    room / 2,
    (n) => `\n… ${plural(n, "more line")} of concerns (see the task PRs).`,
  );
  room -= shownConcerns.join("\n").length;
  const taskLines = ids.map((id) => {
    const pr = state.tasks[id]!.pr;
    return `- ${code(id)}: ${describe(plan.tasks.get(id)!)}${pr ? ` (${pr.url})` : " (no PR)"}`;
  });
  const listed = takeLines(taskLines, room, (n) => `- … and ${plural(n, "more task")} (see the task PRs).`);
  room -= listed.join("\n").length;
  // Summaries fill what is left, in task order; one that does not fit is left to its task PR.
  const tasks: string[] = [];
  for (const [i, line] of listed.entries()) {
    tasks.push(line);
    const summary = i < ids.length ? state.tasks[ids[i]!]!.summary : null;
    if (!summary) continue;
    const block = `  <details><summary>Summary</summary>\n\n  ${prWords(summary, 3000).replace(/\n/g, "\n  ")}\n\n  </details>`;
    if (block.length + 1 > room) continue;
    tasks.push(block);
    room -= block.length + 1;
  }
  // Concerns first: they are why a person reads this PR before merging it.
  return [...head, ...shownConcerns, "", "## Tasks", ...tasks].join("\n");
}

export const integrationPrTitle = (workstream: string): string => `Integrate workstream ${workstream}`;

/** A list of task ids, the first `max` named. */
const idList = (ids: string[], max = 20, show = code) =>
  ids.slice(0, max).map(show).join(", ") + (ids.length > max ? ` and ${count(ids.length - max)} more` : "");

/**
 * The plan comment and check-run summary of a graph file, within `budget` characters: what is
 * dispatched first comes right after the headline (it is what a reviewer checks), then the chart at
 * the level that fits, the workstreams and the waves, each cut at a line.
 */
export function planSummary(plan: Plan, budget = BODY_LIMIT - 2000): string {
  const { graph } = plan;
  // What the engine starts at once (it is asked): ready tasks, one per workstream, at most
  // max_concurrency, as far as the budgets allow.
  const first = firstDispatches(plan);
  // A ready task a serialised overlap holds waits for another workstream to land: said as that.
  const serialised = (plan.waves[0] ?? []).filter((id) => (plan.serialAfter.get(id) ?? []).length > 0);
  const ready = (plan.waves[0] ?? []).length - serialised.length;
  const started = first.dispatched.length + first.held.length;
  const more =
    ready > started
      ? ` (${count(started)} of the ${plural(ready, "ready task")}: one per workstream, \`max_concurrency: ${graph.settings.maxConcurrency}\`)`
      : "";
  const overlapHeld = serialised.length
    ? `. Held by an overlap (\`overlaps: serialize\`): ${idList(serialised, 10, (id) => `${code(id)} until ${idList([...new Set(plan.serialAfter.get(id)!.map((e) => e.workstream))], 3)} ${plan.serialAfter.get(id)!.length > 1 ? "land" : "lands"}`)}`
    : "";
  const capped = (d: { task: string; capMicros: number | null }) =>
    `${code(d.task)} → ${code(taskBranch(graph.name, d.task))}${d.capMicros !== null ? ` (up to ${usd(d.capMicros)})` : ""}`;
  const dispatched = first.dispatched.map((d) => d.task);
  const byTask = new Map(first.dispatched.map((d) => [d.task, d]));
  const held = first.held.length
    ? `. Then, as the budget allows: ${idList(first.held)} (${first.spent.length ? quoteIds(first.spent.join("; "), plan) : "an attempt starts with at least its floor, and those running hold the rest until they end"})`
    : "";
  const head = [
    `**${graph.name}** (${graph.dialect}): ${plural(graph.tasks.length, "task")} in ${plural(graph.workstreams.length, "workstream")}, ${plural(plan.waves.length, "wave")}.`,
    "",
    `**Dispatched first**${more}: ${dispatched.length ? idList(dispatched, 20, (id) => capped(byTask.get(id)!)) : "nothing"}${held}${overlapHeld}`,
  ];
  const budgets = budgetsText(graph, 20, code);
  if (budgets)
    head.push(
      "",
      `**${budgets.replace(": ", "**: ")}. A spent budget holds the run until \`/agentrelay budget +USD\`.`,
    );
  const overlaps = overlapsOf(plan);
  if (overlaps.length > 0)
    head.push(
      "",
      `**Overlaps** (tasks of different workstreams that may run at once and change the same paths${graph.settings.overlaps === "serialize" ? "" : "; `overlaps: serialize` orders them"}):`,
      ...overlapLines(overlaps, 10).map((line) => `- ${quoteIds(agentText(line, 500))}`),
    );
  const unitOnly = unitGatesNote(plan);
  if (unitOnly) head.push("", `**Whole-tree check**: ${quoteIds(agentText(unitOnly, 1_000))}.`);
  let room = budget - head.join("\n").length;
  const chart = mermaidChart(plan);
  const chartLines =
    chart.text === null
      ? [
          "",
          `_The graph is too large to draw readably (${plural(plan.workstreams.size, "workstream")}; the table below has them); \`agentrelay plan\` prints it._`,
        ]
      : [
          "",
          ...(chart.level === "workstreams" ? [`_Drawn by workstream: ${chart.why}._`, ""] : []),
          "```mermaid",
          chart.text,
          "```",
        ];
  const chartFits = chartLines.join("\n").length < room / 2;
  if (chartFits) room -= chartLines.join("\n").length;
  // Past a screenful, the workstream table folds away like the waves.
  const folded = graph.workstreams.length > 20;
  const several = (graph.repositories?.length ?? 0) > 0;
  const repositoryCell = (name: string | undefined) =>
    name === undefined ? "this one" : cellCode(repositoryFullName(graph, name) ?? name);
  const workstreams = takeLines(
    [
      "",
      ...(folded ? [`<details><summary>Workstreams (${count(graph.workstreams.length)})</summary>`, ""] : []),
      // The integration branch is named once, by its pattern: in a column it repeated each id and
      // made a table of long ids wider than the comment (issue 44).
      `Each workstream's tasks merge into its integration branch, ${code(integrationBranch(graph.name, "<workstream>"))}.`,
      "",
      // A graph that spans repositories says where each workstream lives; others read as before.
      `| Workstream |${several ? " Repository |" : ""} From | Into | Auto-merge | Tasks |`,
      `|---|${several ? "---|" : ""}---|---|---|---|`,
      ...graph.workstreams.map(
        (w) =>
          `| ${cellCode(w.id)} |${several ? ` ${repositoryCell(w.repository)} |` : ""} ${cellCode(w.baseBranch)} | ${cellCode(w.mergeTargetBranch)} | ${w.autoMerge ? "yes" : "no"} | ${count((plan.tasksByWorkstream.get(w.id) ?? []).length)} |`,
      ),
    ],
    room / 2,
    (n) => `\n… and ${plural(n, "more workstream")}.`,
  );
  if (folded) workstreams.push("", "</details>");
  room -= workstreams.join("\n").length;
  const waves = takeLines(
    plan.waves.map((wave, i) => `${i + 1}. ${idList(wave)}`),
    room - 100,
    (n) => `… and ${plural(n, "more wave")}.`,
  );
  return [
    ...head,
    ...(chartFits ? chartLines : []),
    ...workstreams,
    "",
    `<details><summary>Waves (${count(plan.waves.length)})</summary>`,
    "",
    ...waves,
    "",
    "</details>",
  ].join("\n");
}

export interface Annotation {
  path: string;
  start_line: number;
  end_line: number;
  start_column?: number;
  end_column?: number;
  annotation_level: "failure";
  title: string;
  message: string;
}

/** GitHub takes at most 50 annotations per check-run request. */
const ANNOTATIONS = 50;

/** Validation issues as check-run annotations: the first 50 (see `unannotated` for the rest). */
export function annotations(issues: GraphIssue[]): Annotation[] {
  return issues.slice(0, ANNOTATIONS).map((issue) => ({
    path: issue.file,
    start_line: issue.line,
    end_line: issue.line,
    ...(issue.line > 0 ? { start_column: issue.column, end_column: issue.column } : {}),
    annotation_level: "failure",
    title: printable(issue.path) || "graph",
    message: printable(issue.message),
  }));
}

/** The line that counts the problems left without an annotation, or null when every one has one. */
export function unannotated(issues: GraphIssue[]): string | null {
  const left = issues.length - ANNOTATIONS;
  if (left <= 0) return null;
  return `${thousands(left)} of ${thousands(issues.length)} problems get no annotation (GitHub takes ${ANNOTATIONS} a check run); all are listed here.`;
}

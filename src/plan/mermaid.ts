/**
 * Mermaid flowcharts of a plan, coloured by workstream (and, when marks are given, labelled and
 * outlined by status). GitHub renders them in comments and check-run summaries, within limits:
 * mermaid refuses a chart of more than 500 edges, and a chart wider than the page is scaled down
 * until its text cannot be read. A chart is drawn task by task while it is small and its text stays
 * readable, else one node per workstream, else not at all (the caller shows a table instead).
 */
import type { Plan } from "./model.ts";
import { count, repositoryFullName } from "../graph/model.ts";

const PALETTE = ["#dbeafe", "#dcfce7", "#fef9c3", "#fce7f3", "#ede9fe", "#ffedd5", "#cffafe", "#f1f5f9"];

const escapeLabel = (text: string): string => text.replace(/["<>#]/g, (c) => `#${c.charCodeAt(0)};`);

/** The largest charts drawn at each level; both stay far below mermaid's 500 edges. */
export const CHART_LIMITS = {
  tasks: { nodes: 60, edges: 150, depth: 15 },
  workstreams: { nodes: 60, edges: 150 },
} as const;

/**
 * Mermaid writes labels at 16 px and scales a chart down to the width it is given: a comment's
 * content box in a 1,280 px window. That box is 806 px wide on GitHub, as its CSS (Primer) lays out a
 * pull request or issue page at that width: 1,280 px, less the page's side padding (2 x 32 px,
 * `container-xl px-lg-5`), the sidebar (296 px at `lg`) and the gutter before it (24 px), the
 * timeline's avatar column (56 px, `ml-md-6 pl-md-3`), the comment's border (2 x 1 px) and its body's
 * padding (2 x 16 px). A chart is drawn only if its text stays at least 10 px high there, so at most
 * 806 x 16 / 10 = 1,289 px wide as mermaid lays it out. Widths are estimated from the labels as
 * mermaid 11 draws them in Chromium (a node is 66 px plus its longest line), 50 px between nodes, 16
 * px around the chart and 24 px more for each workstream's box; the render tests measure the text as
 * drawn, in Chromium, at that width. A line is as wide as its characters (CHAR_WIDTHS): a flat width
 * a character, right for lowercase, let ids in capitals ("PAYMENTS_MIGRATION") through 30% too
 * narrow, and their charts drew text at 9.5 px.
 */
export const READABLE = { fontPx: 16, minPx: 10, columnPx: 806 } as const;
const MAX_WIDTH = (READABLE.columnPx * READABLE.fontPx) / READABLE.minPx;
/**
 * Advance widths of Arial (Helvetica's metrics, the widest of mermaid's usual fonts but Verdana) in
 * thousandths of an em, by character; another ASCII character counts as a digit, any other as a whole
 * em (CJK is; accented letters are less). Chromium here draws lowercase labels narrower (6.6 px a
 * character at 16 px, against 8 by this table): the room keeps a reader's wider fonts readable.
 */
const CHAR_WIDTHS: [string, number][] = [
  ["'", 191],
  ["ijl", 222],
  [" !,./:;I[\\]ft·", 278],
  ["()-`r{}", 333],
  ['"', 355],
  ["Jcksvxyz", 500],
  ["+<=>|^", 584],
  ["FTZ", 611],
  ["&ABEKPSVXY", 667],
  ["CDHNRUw", 722],
  ["GOQ", 778],
  ["Mm", 833],
  ["%", 889],
  ["W", 944],
  ["@", 1015],
];
const WIDTH_OF = new Map(CHAR_WIDTHS.flatMap(([chars, width]) => [...chars].map((c) => [c, width] as const)));
/** How wide `text` is drawn at mermaid's 16 px, as CHAR_WIDTHS estimates it. */
export const textPx = (text: string): number =>
  ([...text].reduce((sum, c) => sum + (WIDTH_OF.get(c) ?? (c.charCodeAt(0) < 128 ? 556 : 1000)), 0) *
    READABLE.fontPx) /
  1000;
const NODE_PADDING = 66;
const CHART_PADDING = 16;
const NODE_GAP = 50;
const BOX_PADDING = 24;

export type ChartLevel = "tasks" | "workstreams" | "none";

/**
 * How a node is outlined: its own failure (red), waiting for a person (amber: a merge, a conflict, a
 * budget), blocked by another's failure (grey, dashed), at work (blue), merged (green).
 */
export type Mark = "broken" | "waiting" | "blocked" | "active" | "done" | null;

/** What a chart says of each node beyond its id: a second line, and an outline. */
export interface Marks {
  label(id: string): string;
  mark(id: string): Mark;
}

const STYLES = [
  "  classDef broken stroke:#dc2626,stroke-width:3px",
  "  classDef waiting stroke:#d97706,stroke-width:4px",
  "  classDef blocked stroke:#6b7280,stroke-width:2px,stroke-dasharray:5 4",
  "  classDef active stroke:#2563eb,stroke-width:3px",
  "  classDef done stroke:#16a34a,stroke-width:2px",
];

const colours = (plan: Plan) =>
  [...plan.workstreams.keys()].map(
    (_, i) => `  classDef ws${i} fill:${PALETTE[i % PALETTE.length]},stroke:#475569,color:#0f172a`,
  );

const nodeWidth = (lines: string[]) => Math.max(...lines.map(textPx)) + NODE_PADDING;

/** The rank of each node: the longest path to it (as mermaid's layout ranks a top-down chart). */
function ranks(nodes: string[], edges: { from: string; to: string }[]): Map<string, number> {
  const into = new Map<string, string[]>(nodes.map((n) => [n, []]));
  for (const e of edges) into.get(e.to)!.push(e.from);
  const rank = new Map<string, number>();
  const of = (n: string): number => {
    if (!rank.has(n)) {
      rank.set(n, 0); // edges follow the plan's order, which has no cycles; this only guards
      rank.set(n, Math.max(-1, ...into.get(n)!.map(of)) + 1);
    }
    return rank.get(n)!;
  };
  nodes.forEach(of);
  return rank;
}

/** The widest rank of a layout, as mermaid draws it (nodes side by side, gaps, boxes around groups). */
function layoutWidth(nodes: { id: string; width: number; group?: string }[], rank: Map<string, number>) {
  const rows = new Map<number, { width: number; groups: Set<string> }>();
  for (const n of nodes) {
    const row = rows.get(rank.get(n.id)!) ?? { width: -NODE_GAP, groups: new Set<string>() };
    row.width += n.width + NODE_GAP;
    if (n.group) row.groups.add(n.group);
    rows.set(rank.get(n.id)!, row);
  }
  return CHART_PADDING + Math.max(...[...rows.values()].map((r) => r.width + r.groups.size * BOX_PADDING));
}

function taskLines(plan: Plan, marks: Marks | undefined): Map<string, string[]> {
  return new Map(plan.order.map((id) => [id, marks ? [id, marks.label(id)] : [id]]));
}

/** One node per task, grouped in a subgraph per workstream. */
export function mermaidDag(plan: Plan, marks?: Marks): string {
  const node = new Map(plan.order.map((id, i) => [id, `t${i}`]));
  const wsIds = [...plan.workstreams.keys()];
  const lines = ["flowchart TD", ...colours(plan), ...STYLES];
  const labels = taskLines(plan, marks);
  for (const [ws, ids] of plan.tasksByWorkstream) {
    if (ids.length === 0) continue;
    // A graph that spans repositories says where each workstream lives.
    const repository = plan.workstreams.get(ws)!.repository;
    const where = repository === undefined ? "" : ` · ${repositoryFullName(plan.graph, repository)}`;
    lines.push(`  subgraph workstream_${wsIds.indexOf(ws)}["${escapeLabel(ws + where)}"]`);
    for (const id of ids) {
      const [name, detail] = labels.get(id)!;
      const label = escapeLabel(name!) + (detail ? `<br/><i>${escapeLabel(detail)}</i>` : "");
      lines.push(`    ${node.get(id)}["${label}"]:::ws${wsIds.indexOf(ws)}`);
    }
    lines.push("  end");
  }
  for (const id of plan.order) {
    for (const dep of plan.tasks.get(id)!.dependencies) lines.push(`  ${node.get(dep)} --> ${node.get(id)}`);
  }
  if (marks)
    for (const id of plan.order) {
      const mark = marks.mark(id);
      if (mark) lines.push(`  class ${node.get(id)} ${mark}`);
    }
  return lines.join("\n");
}

/** Edges between workstreams: a child from its parent (dotted), a dependency across workstreams. */
function workstreamEdges(plan: Plan): { from: string; to: string; parent: boolean }[] {
  const seen = new Set<string>();
  const edges: { from: string; to: string; parent: boolean }[] = [];
  for (const ws of plan.graph.workstreams) {
    if (ws.parentId) edges.push({ from: ws.parentId, to: ws.id, parent: true });
    seen.add(`${ws.parentId}>${ws.id}`);
  }
  for (const id of plan.order) {
    const to = plan.tasks.get(id)!.workstreamId;
    for (const dep of plan.tasks.get(id)!.dependencies) {
      const from = plan.tasks.get(dep)!.workstreamId;
      if (from === to || seen.has(`${from}>${to}`)) continue;
      seen.add(`${from}>${to}`);
      edges.push({ from, to, parent: false });
    }
  }
  return edges;
}

/** A workstream's label under its id: its task count. */
const taskCount = (plan: Plan, ws: string) => count((plan.tasksByWorkstream.get(ws) ?? []).length, "task");

/**
 * The workstream chart's layout: workstreams with no edge at all are stacked in a grid of as many
 * columns as stay readable (invisible links, `~~~`, hold the columns), the rest ranked by their
 * edges. Null when no arrangement is readable.
 */
function workstreamLayout(
  plan: Plan,
  marks: Marks | undefined,
): { columns: number; isolated: string[]; width: number } | null {
  const wsIds = [...plan.workstreams.keys()];
  const edges = workstreamEdges(plan);
  const linked = new Set(edges.flatMap((e) => [e.from, e.to]));
  const isolated = wsIds.filter((w) => !linked.has(w));
  const widths = new Map(wsIds.map((w) => [w, nodeWidth([w, marks ? marks.label(w) : taskCount(plan, w)])]));
  const connected = ranks(
    wsIds.filter((w) => linked.has(w)),
    edges,
  );
  for (let columns = Math.max(1, isolated.length); columns >= 1; columns--) {
    const rank = new Map(connected);
    isolated.forEach((w, i) => rank.set(w, Math.floor(i / columns)));
    const width = layoutWidth(
      wsIds.map((id) => ({ id, width: widths.get(id)! })),
      rank,
    );
    if (width <= MAX_WIDTH) return { columns, isolated, width };
    if (isolated.length === 0) break;
  }
  return null;
}

/** One node per workstream, labelled with its task count (or what `marks` says of it). */
export function mermaidWorkstreams(plan: Plan, marks?: Marks): string {
  const wsIds = [...plan.workstreams.keys()];
  const lines = ["flowchart TD", ...colours(plan), ...STYLES];
  for (const [i, ws] of wsIds.entries()) {
    const detail = marks ? marks.label(ws) : taskCount(plan, ws);
    lines.push(`  w${i}["${escapeLabel(ws)}<br/><i>${escapeLabel(detail)}</i>"]:::ws${i}`);
    const mark = marks?.mark(ws);
    if (mark) lines.push(`  class w${i} ${mark}`);
  }
  for (const e of workstreamEdges(plan))
    lines.push(`  w${wsIds.indexOf(e.from)} ${e.parent ? "-.->" : "-->"} w${wsIds.indexOf(e.to)}`);
  const layout = workstreamLayout(plan, marks);
  if (layout && layout.columns < layout.isolated.length) {
    const { columns, isolated } = layout;
    for (let i = columns; i < isolated.length; i++)
      lines.push(`  w${wsIds.indexOf(isolated[i - columns]!)} ~~~ w${wsIds.indexOf(isolated[i]!)}`);
  }
  return lines.join("\n");
}

/** Whether the task chart's text stays readable (see READABLE). */
function tasksReadable(plan: Plan, marks: Marks | undefined): boolean {
  const labels = taskLines(plan, marks);
  const edges = plan.order.flatMap((id) =>
    plan.tasks.get(id)!.dependencies.map((from) => ({ from, to: id })),
  );
  const rank = ranks(plan.order, edges);
  const nodes = plan.order.map((id) => ({
    id,
    width: nodeWidth(labels.get(id)!),
    group: plan.tasks.get(id)!.workstreamId,
  }));
  return layoutWidth(nodes, rank) <= MAX_WIDTH;
}

/**
 * Why a plan is not drawn task by task, in words: too many tasks, dependencies or waves for a chart
 * (mermaid's limits, with room), or a chart too wide for its text to stay readable; null when it is.
 */
function notByTask(plan: Plan, marks: Marks | undefined): string | null {
  const edges = plan.graph.tasks.reduce((n, t) => n + t.dependencies.length, 0);
  const t = CHART_LIMITS.tasks;
  if (plan.order.length > t.nodes || edges > t.edges || plan.waves.length > t.depth)
    return `too large to draw task by task: ${count(plan.order.length, "task")}, ${count(edges, "dependency", "dependencies")}, ${count(plan.waves.length, "wave")}`;
  return tasksReadable(plan, marks) ? null : "drawn task by task, its text would be too small to read";
}

/** The level a plan is drawn at on GitHub: its tasks, its workstreams, or none (too large to read). */
export function chartLevel(plan: Plan, marks: { tasks?: Marks; workstreams?: Marks } = {}): ChartLevel {
  if (notByTask(plan, marks.tasks) === null) return "tasks";
  const w = CHART_LIMITS.workstreams;
  if (
    plan.workstreams.size <= w.nodes &&
    workstreamEdges(plan).length <= w.edges &&
    workstreamLayout(plan, marks.workstreams) !== null
  )
    return "workstreams";
  return "none";
}

/**
 * The chart GitHub is shown, at the level that fits (null text when even the workstreams are too
 * many), and why it is not drawn task by task.
 */
export function mermaidChart(
  plan: Plan,
  marks: { tasks?: Marks; workstreams?: Marks } = {},
): { level: ChartLevel; text: string | null; why: string | null } {
  const why = notByTask(plan, marks.tasks);
  const level = chartLevel(plan, marks);
  if (level === "tasks") return { level, text: mermaidDag(plan, marks.tasks), why: null };
  if (level === "workstreams") return { level, text: mermaidWorkstreams(plan, marks.workstreams), why };
  return { level, text: null, why };
}

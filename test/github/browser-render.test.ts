/**
 * What people read on GitHub, as they see it: markdown rendered as GitHub flavours it (marked, GFM)
 * with its mermaid blocks drawn by mermaid in headless Chromium, in a 1,280 px window whose comment
 * content box is as wide as GitHub's (READABLE.columnPx, 806 px: see plan/mermaid.ts). Runs of 5, 300,
 * 3,000 and 10,000 tasks in 2 to 120 workstreams, and one of 30 workstreams that do not auto-merge,
 * are simulated to the end (or stopped mid-way, running) with failures, blocked tasks, a conflict
 * left to a person and a spent budget. Their status comment, plan comment, check runs and integration
 * PR bodies must tell the truth and agree with each other and with `simulate --json`: the headline's
 * counts, every task not done under what holds it, the caps on "waiting for you" lines, the words
 * (ids as code, numbers with separators, one form of duration), chart text at least 10 px high in the
 * browser, what to do next on the first screen, everything within GitHub's limits. Screenshots are
 * kept in test-artifacts/render/ (not committed).
 *
 * Needs Chromium (Debian's `chromium`; `CHROMIUM` names another); `.ci/run` installs it and sets
 * AGENTRELAY_REQUIRE_BROWSER, which turns a missing browser into a failure instead of a skip.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { marked } from "marked";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { simulate, simulationJson, type SimulationResult } from "../../src/engine/simulate.ts";
import { reproduce } from "../../src/engine/verification.ts";
import type { RunState, TaskStatus } from "../../src/engine/types.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { fit, LIMITS } from "../../src/github/limits.ts";
import { taskCheckOutput } from "../../src/github/projections.ts";
import { integrationPrBody, PLAN_MARKER, planSummary } from "../../src/github/render.ts";
import { statusComment } from "../../src/github/status-comment.ts";
import { CHART_LIMITS, READABLE } from "../../src/plan/mermaid.ts";
import type { Plan } from "../../src/plan/model.ts";
import { REPO_ROOT } from "../support/fixtures.ts";
import { runAt, scaleGraph, scaleWorld, workstreamsGraph } from "../support/runs.ts";
import { describeNeeding } from "../support/skips.ts";

function findChromium(): string | null {
  if (process.env.CHROMIUM) return process.env.CHROMIUM;
  for (const name of ["chromium", "chromium-browser", "google-chrome"]) {
    try {
      return execFileSync("which", [name], { encoding: "utf8" }).trim();
    } catch {
      // not this one
    }
  }
  return null;
}

const chromium = findChromium();
const required = Boolean(process.env.AGENTRELAY_REQUIRE_BROWSER);
const ARTIFACTS = join(REPO_ROOT, "test-artifacts", "render");
const MERMAID = join(
  createRequire(import.meta.url).resolve("mermaid/package.json"),
  "..",
  "dist",
  "mermaid.min.js",
);
/** A 1,280 px window, and the first screen's height. */
const WINDOW = { width: 1280, height: 800 };

/** A comment's markdown as GitHub flavours it, its mermaid blocks left for mermaid to draw. */
const commentHtml = (markdown: string) =>
  (marked.parse(markdown, { gfm: true, async: false }) as string).replace(
    /<pre><code class="language-mermaid">([\s\S]*?)<\/code><\/pre>/g,
    '<pre class="mermaid">$1</pre>',
  );

/** The page a comment is shown in, as GitHub lays it out: a content box READABLE.columnPx wide, at GitHub's text size. */
const PAGE = `<!doctype html><html><head><meta charset="utf-8"><style>
    body { margin: 0; font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; }
    .comment { box-sizing: content-box; width: ${READABLE.columnPx}px; margin: 16px; padding: 16px; border: 1px solid #d0d7de; }
    table { border-collapse: collapse; display: block; max-width: 100%; overflow: auto; }
    td, th { border: 1px solid #d0d7de; padding: 6px 13px; }
    code { font-size: 85%; background: rgba(175, 184, 193, 0.2); padding: 0.2em 0.4em; }
  </style></head><body><div class="comment"></div></body></html>`;

/** The case whose ids are 80 characters, and what a reader copies from code in a case's comments, exactly. */
const name80 = "12 tasks in 3 workstreams whose ids are 80 capitals";
const COPIED = new Map<string, string[]>();

interface Rendered {
  errors: string[];
  charts: { width: number; height: number; smallestTextPx: number }[];
  closedHeight: number;
  /** The page's text as shown (details closed). */
  shown: string;
  /** The text within the first screen. */
  firstScreen: string;
  /** Each table, code block, paragraph or list item wider than the comment, details open: "823 px: its text". */
  tooWide: string[];
  /** What selecting each code element that may break (`<wbr>`) copies. */
  copied: string[];
}

/** A simulated run at scale: the graph, its plan, and the state at the end (or after `maxEvents`). */
interface ScaleCase {
  name: string;
  tasks: number;
  workstreams: number;
  budget: number;
  maxEvents?: number;
  /** Workstreams auto-merge (default); without, a simulated reviewer merges nothing. */
  autoMerge?: boolean;
  /** At most this many failing tasks (scaleWorld's default, nine). */
  failing?: number;
  /** The state the headline must give. */
  phase: string;
  /**
   * Integration PRs verified before they land: `ws_2`'s branch no repair fixes, `ws_5`'s is repaired
   * once, one in eight does not auto-merge, a task of `ws_11` raises a design concern.
   */
  verify?: boolean;
  /** Conflicts are in many files with long names, some not ASCII (default: one, `simulated.txt`). */
  manyFiles?: boolean;
}

const SCALE: ScaleCase[] = [
  { name: "5", tasks: 5, workstreams: 3, budget: 2.25, phase: "waiting for budget and for you" },
  { name: "5-running", tasks: 5, workstreams: 2, budget: 10, maxEvents: 5, phase: "running" },
  { name: "300", tasks: 300, workstreams: 10, budget: 60, phase: "waiting for budget and for you" },
  {
    name: "3000",
    tasks: 3_000,
    workstreams: 40,
    budget: 1_000,
    maxEvents: 2_500,
    phase: "running, waiting for you",
  },
  { name: "10000", tasks: 10_000, workstreams: 120, budget: 2_000, phase: "waiting for budget and for you" },
  // Budgets that let the workstreams land, so that verification, repair and the merges left to a
  // person are what the comment says.
  { name: "300-verified", tasks: 300, workstreams: 12, budget: 400, verify: true, phase: "waiting for you" },
  {
    name: "3000-verified",
    tasks: 3_000,
    workstreams: 40,
    budget: 4_000,
    verify: true,
    manyFiles: true,
    phase: "waiting for you",
  },
  {
    name: "10000-verified",
    tasks: 10_000,
    workstreams: 120,
    budget: 15_000,
    verify: true,
    phase: "waiting for you",
  },
  {
    name: "30-workstreams",
    tasks: 300,
    workstreams: 30,
    budget: 1_000,
    autoMerge: false,
    failing: 2,
    phase: "waiting for you",
  },
];

const caseName = (c: ScaleCase) =>
  `${c.tasks.toLocaleString("en-US")} tasks in ${c.workstreams} workstreams${c.autoMerge === false ? " that do not auto-merge" : ""}${c.verify ? ", verified before landing" : ""}${c.manyFiles ? ", conflicts in 40 files" : ""}${c.maxEvents ? ", running" : ""}`;

/** The files of a conflict in 40 files with long names, some not ASCII. */
const MANY_FILES = Array.from(
  { length: 40 },
  (_, i) => `src/paquetes/módulo_${i}/componentes/ComponenteConUnNombreMuyLargo${i}.tsx`,
);

/** A failure reason as long as a real gate's: long enough to be cut. */
const LONG_REASON =
  "Completion gate failed after 5 attempt(s): pytest -q tests/test_module.py::test_round_trip_keeps_unicode_names exited 1; the last lines said AssertionError: expected the parsed document to keep every heading and its anchors";

interface Run {
  plan: Plan;
  state: RunState;
  result: SimulationResult;
  /** `agentrelay simulate --json`. */
  json: {
    tasks: Record<string, { status: TaskStatus; heldBy?: string }>;
    events: { type: string; task?: string }[];
  };
}

const runs = new Map<ScaleCase, Run>();
function scaleRun(c: ScaleCase): Run {
  if (!runs.has(c)) {
    const graph = parseGraph(
      "scale.yaml",
      scaleGraph(c.tasks, c.workstreams, c.budget, c.autoMerge ?? true, c.verify ?? false),
      {
        limits: { maxBytes: 64 << 20 },
      },
    );
    const world = scaleWorld(c.tasks, c.workstreams, c.failing);
    const result = simulate(graph, {
      ...world,
      ...(c.verify
        ? {
            brokenTogether: new Map([
              ["ws_2", Infinity],
              ["ws_5", 1],
            ]),
            concerns: new Set([`t${graph.tasks.findIndex((t) => t.workstreamId === "ws_11")}`]),
          }
        : {}),
      ...(c.maxEvents ? { maxEvents: c.maxEvents } : {}),
      ...(c.manyFiles ? { conflictFiles: MANY_FILES } : {}),
      ...(c.autoMerge === false ? { reviewerMerges: false } : {}),
    });
    for (const t of Object.values(result.state.tasks)) if (t.status === "failed") t.reason = LONG_REASON;
    const json = JSON.parse(JSON.stringify(simulationJson(result))) as Run["json"];
    runs.set(c, { plan: result.plan, state: result.state, result, json });
  }
  return runs.get(c)!;
}

const links = {
  trackingIssue: 7,
  job: (id: string) => `https://github.com/o/r/actions/runs/${id}`,
  graph: "https://github.com/o/r/blob/abc/.workflow/scale.yaml",
};
/** A minute after the run's latest event. */
const nowOf = (state: RunState) => Math.max(0, ...state.timeline.map((e) => e.at)) + 60_000;

/**
 * The root each blocked task's reasons lead to, followed through the engine's own words ("dependency
 * 'x' failed", "upstream workstream 'w' failed" and the workstream's "task 'x' failed"): an oracle
 * independent of the projection the comment is built from.
 */
function rootByReasons(state: RunState, id: string): string {
  const seen = new Set<string>();
  for (let at = id; ;) {
    if (seen.has(at)) throw new Error(`the reasons of ${id} go round in a circle`);
    seen.add(at);
    const t = state.tasks[at]!;
    if (t.status !== "blocked") return at;
    const dep = /^dependency '([^']+)'/.exec(t.reason ?? "");
    if (dep) {
      at = dep[1]!;
      continue;
    }
    const ws = /workstream '([^']+)' failed$/.exec(t.reason ?? "")![1]!;
    const root = /task '([^']+)' (failed|was cancelled)$/.exec(state.workstreams[ws]!.reason ?? "");
    if (!root) return `workstream ${ws}`;
    at = root[1]!;
  }
}

/** Every word a cut can end on: the words of the texts the comment quotes, as a clause ends them too. */
function wordsOf(plan: Plan, state: RunState): Set<string> {
  const texts = [
    ...plan.graph.tasks.map((t) => t.description ?? ""),
    ...Object.values(state.tasks).map((t) => t.reason ?? ""),
    ...Object.values(state.workstreams).map((w) => w.reason ?? ""),
    ...Object.values(state.budget?.spent ?? {}),
  ];
  // A cut where a clause ends keeps the word before its ":" or ";".
  return new Set(
    texts.flatMap((t) => t.replace(/'/g, "`").split(/\s+/)).flatMap((w) => [w, w.replace(/[:;.]$/, "")]),
  );
}

const num = (text: string) => Number(text.replace(/,/g, ""));

/** Tasks of the `--json` counted by what holds them. */
function heldBy(json: Run["json"]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const t of Object.values(json.tasks))
    if (t.status === "pending") counts.set(t.heldBy!, (counts.get(t.heldBy!) ?? 0) + 1);
  return counts;
}

/** Text with code, links, ids and charts taken out: where a number is a count people read. */
const prose = (text: string) =>
  text
    .replace(/```mermaid[\s\S]*?```/g, "")
    .replace(/`[^`]*`/g, "")
    .replace(/\]\([^)]*\)/g, "]")
    .replace(/<!--.*?-->/g, "")
    .replace(/#\d+/g, "")
    .replace(/\b(t|ws_|scale-)\d+/g, "");

describe("runs at scale, as their comments say", () => {
  it.each(SCALE.map((c) => [caseName(c), c] as const))(
    "%s: the headline, every task not done under what holds it, caps, words, agreement, GitHub's limits",
    (_, c) => {
      const { plan, state, json } = scaleRun(c);
      const body = statusComment(plan, state, nowOf(state), links);
      const lines = body.split("\n");

      // The headline's state and counts are the --json's.
      const headline = new RegExp(`^### agentrelay run \`scale-${c.tasks}/1\`: ${c.phase} \\((.+)\\)$`).exec(
        lines[1]!,
      );
      expect(headline, lines[1]).not.toBeNull();
      const statuses = new Map<string, number>();
      for (const t of Object.values(json.tasks)) statuses.set(t.status, (statuses.get(t.status) ?? 0) + 1);
      const words: Record<string, TaskStatus> = {
        running: "running",
        "PR open": "pr_open",
        failed: "failed",
        blocked: "blocked",
        "to do": "pending",
        merged: "merged",
        cancelled: "cancelled",
        "done without changes": "completed",
      };
      const shownCounts = new Map(
        headline![1]!.split(", ").map((part) => {
          const [, n, word] = /^([\d,]+) (.+)$/.exec(part)!;
          return [words[word!]!, num(n!)] as const;
        }),
      );
      expect(shownCounts).toEqual(statuses);

      // Within GitHub's limits, and nothing the request hook would have to cut.
      expect(body.length).toBeLessThanOrEqual(LIMITS.body);
      expect(fit(body, LIMITS.body)).toBe(body);
      const plans = planSummary(plan);
      expect(plans.length).toBeLessThanOrEqual(LIMITS.body);
      for (const text of [body, plans]) {
        const edges = text.split("\n").filter((l) => /-->|-\.->|~~~/.test(l)).length;
        expect(edges).toBeLessThan(500);
      }

      // Every blocked task is counted, under the failure its reasons lead to.
      const blocked = Object.entries(state.tasks).filter(([, t]) => t.status === "blocked");
      const failed = Object.values(state.tasks).filter((t) => t.status === "failed").length;
      const lead = state.outcome ? "Failed" : "Waiting for you";
      if (blocked.length > 0)
        expect(body).toContain(
          `**${lead}**: ${blocked.length.toLocaleString("en-US")} task${blocked.length > 1 ? "s" : ""} blocked by ${failed} failure`,
        );
      const groups = [...body.matchAll(/^- ([\d,]+) tasks? blocked by `([^`]+)` failed/gm)];
      expect(groups.reduce((n, g) => n + num(g[1]!), 0)).toBe(blocked.length);
      const expected = new Map<string, number>();
      for (const [id] of blocked)
        expected.set(rootByReasons(state, id), (expected.get(rootByReasons(state, id)) ?? 0) + 1);
      expect(new Map(groups.map((g) => [g[2]!, num(g[1]!)]))).toEqual(expected);

      // Every task to do is counted once, under what holds it, as the --json says: the counts of the
      // lines add up to the headline's "to do", and each named cause has the --json's count.
      const held = heldBy(json);
      const todo = [...held.values()].reduce((a, b) => a + b, 0);
      const counted = [...body.matchAll(/([\d,]+) tasks? to do (?:waits?|wait their|waits its)/g)].map((m) =>
        num(m[1]!),
      );
      expect(counted.reduce((a, b) => a + b, 0)).toBe(todo);
      for (const line of lines.filter((l) => l.startsWith("- **Waiting for you**: "))) {
        const n = /; ([\d,]+) tasks? to do waits? for it\./.exec(line);
        const spent = Object.entries(state.budget?.spent ?? {}).find(([, m]) =>
          line.includes(m.replace(/'([^']+)'/g, "`$1`")),
        );
        const pr = /^- \*\*Waiting for you\*\*: (?:merge )?\[#(\d+)\]/.exec(line);
        const key = spent
          ? `budget:${spent[0]}`
          : pr
            ? Object.entries({ ...state.tasks, ...state.workstreams }).find(
                ([, r]) => r.pr?.number === Number(pr[1]),
              )
            : undefined;
        if (typeof key === "string") expect(num(n?.[1] ?? "0"), line).toBe(held.get(key) ?? 0);
        else if (key) {
          const [id] = key;
          const kind = id in state.tasks ? "task" : "workstream";
          expect(num(n?.[1] ?? "0"), line).toBe(held.get(`pr:${kind}:${id}`) ?? 0);
        }
      }
      // Each kind of "waiting for you" line names five and counts the rest.
      const kinds = {
        budget: /budget|spent budget/,
        failure: /blocked by|failed \(/,
        conflict: /by hand|task PRs? with conflicts/,
        merge: /^- \*\*Waiting for you\*\*: (merge |[\d,]+ more integration PR)/,
      };
      for (const [kind, pattern] of Object.entries(kinds))
        expect(
          lines.filter((l) => /^- \*\*(Waiting for you|Failed)\*\*/.test(l) && pattern.test(l)).length,
          kind,
        ).toBeLessThanOrEqual(6);
      if (c.autoMerge === false) {
        expect(lines.filter((l) => l.startsWith("- **Waiting for you**: merge "))).toHaveLength(5);
        expect(body).toMatch(/^- \*\*Waiting for you\*\*: [\d,]+ more integration PRs to merge: /m);
      }

      // Integration PR bodies count what waits for their merge as the status comment does.
      for (const [wsId, ws] of Object.entries(state.workstreams)) {
        if (ws.status !== "pr_open") continue;
        const prBody = integrationPrBody(plan, state, wsId);
        expect(prBody.length).toBeLessThanOrEqual(LIMITS.body);
        const waits = held.get(`pr:workstream:${wsId}`) ?? 0;
        if (waits)
          expect(prBody).toContain(
            `${waits.toLocaleString("en-US")} task${waits > 1 ? "s" : ""} of the run wait`,
          );
      }
      // Check runs say the run's spend as the status comment does.
      const spendLine = lines.find((l) => l.startsWith("Spent "))!.replace(/\.$/, "");
      for (const [id, t] of Object.entries(state.tasks)
        .filter(([, t]) => t.status === "failed")
        .slice(0, 3)) {
        const check = taskCheckOutput(state, id, t.attempt, plan.graph, null)!;
        expect(check.output.summary).toContain(`run: ${spendLine})`);
        expect(check.output.summary.length).toBeLessThanOrEqual(LIMITS.body);
      }
      // The plan comment promises the attempts the run started with, and no other.
      const promised = [...plans.matchAll(/`([^`]+)` → `agentrelay\//g)].map((m) => m[1]!);
      const firstDone = json.events.findIndex((e) => /^task_(succeeded|failed)$/.test(e.type));
      const started = json.events
        .slice(0, firstDone)
        .filter((e) => e.type === "dispatch")
        .map((e) => e.task);
      expect(promised).toEqual(started.slice(0, promised.length));
      expect(plans).toContain(`${c.tasks.toLocaleString("en-US")} tasks in ${c.workstreams} workstreams`);

      // Words: ids are code, counts have separators, one form of duration, no "(s)" of ours, no cut
      // before the branch a person must merge, "too large" only when it is, a finished run waits for
      // nothing, no raw enum names.
      // (The gate's own words, which say "attempt(s)", are not ours.)
      const ours = body.replaceAll("failed after 5 attempt(s)", "");
      expect(ours).not.toContain("(s)");
      const ids = new Set([...plan.tasks.keys(), ...plan.workstreams.keys()]);
      for (const m of body.matchAll(/'([A-Za-z0-9][\w.-]*)'/g)) expect(ids.has(m[1]!), m[0]).toBe(false);
      expect(prose(body)).not.toMatch(/(?<![.,\d])\d{4,}/);
      expect(prose(plans)).not.toMatch(/(?<![.,\d])\d{4,}/);
      // Durations in words, never as a time of day.
      expect(body).not.toMatch(/\| [\d,]+:\d\d:\d\d \|/);
      for (const m of body.matchAll(/\| ([^|]*\d (?:days?|h|min|s)) \| \$/g))
        expect(m[1]).toMatch(/^[\d,]+ (days?|h|min|s)( [\d,]+ (h|min|s))?$/);
      // A conflict's row points under its table, where what to do is said whole.
      for (const row of lines.filter((l) => l.includes("| waits for you: "))) {
        expect(row).toContain("| waits for you: merge by hand, as said under this table |");
        const id = /^\| (`[^`]+`) \|/.exec(row)![1]!;
        expect(lines.find((l) => l.startsWith(`- ${id} waits for you: `))).toMatch(
          /waits for you: merge `[^`]+` into `[^`]+` by hand/,
        );
      }
      const tooLarge =
        plan.order.length > CHART_LIMITS.tasks.nodes || plan.waves.length > CHART_LIMITS.tasks.depth;
      if (!tooLarge) expect(body + plans).not.toContain("too large to draw task by task");
      if (state.outcome) expect(body).not.toContain("Waiting for you");
      expect(body).not.toMatch(/\bpr_open\b|\bmerge_ready\b|\bpending\b/);
      // A conflict in many long-named files is said whole: what to do, the files it names, why.
      if (c.manyFiles)
        expect(body).toContain(
          "by hand: they conflict in `src/paquetes/módulo_0/componentes/ComponenteConUnNombreMuyLargo0.tsx` and 39 more (resolution is off, `max_resolution_attempts: 0`)",
        );
      // Cuts end on a whole word of the text they cut, with a marker.
      const cutWords = wordsOf(plan, state);
      for (const [, word] of body.matchAll(/(\S+) …/g))
        expect(cutWords, `cut after "${word}"`).toContain(word);
    },
  );
});

const CASES: [string, ScaleCase | null, () => string][] = [
  [
    "5 tasks by hand",
    null,
    () => {
      // With a budget, spent: the status says so, and the plan lists it.
      const text = workstreamsGraph(1, 5, "five").replace("workstreams:", "max_cost_usd: 2\nworkstreams:");
      const { plan, state } = runAt(text, {
        w0_t0: { status: "merged" },
        w0_t1: { status: "failed", reason: "Completion gate failed after 5 attempt(s): pytest -q" },
      });
      state.budget = {
        run: { spentMicros: 2_010_000, reservedMicros: 0, raisedMicros: 0 },
        holding: 0,
        workstreams: {},
        raises: [],
        spent: { run: "budget spent: $2.01 of $2.00 for the run" },
      };
      state.candidates = ["w0_t2"];
      // And a task PR whose conflicts an agent is resolving.
      Object.assign(state.tasks.w0_t3!, {
        status: "pr_open",
        pr: { number: 12, url: "https://github.com/o/r/pull/12" },
        conflict: {
          files: ["src/calc.py"],
          resolutions: [
            { n: 1, dispatchedAt: 0, job: "77", outcome: null, reason: null, costMicros: null, turns: null },
          ],
        },
      });
      return `${statusComment(plan, state, 90_000)}\n\n---\n\n${PLAN_MARKER}\n${planSummary(plan)}`;
    },
  ],
  [
    "72 tasks in 6 workstreams named in capitals",
    null,
    () => {
      // Ids in capitals are a third wider than lowercase: a chart sized by a flat width a character
      // drew its text at 8.7 px (issue 44, item 6), and tables of them were wider than the comment
      // (item 8).
      const text = workstreamsGraph(6, 12, "caps").replace(
        /\bws_(\d+)\b/g,
        (_, n: string) => `PAYMENTS_AND_MOBILE_WALLET_MIGRATION_${n.padStart(2, "0")}`,
      );
      const { plan, state } = runAt(text, {
        w0_t0: { status: "merged" },
        w1_t0: { status: "failed", reason: "Completion gate failed: pytest -q exited 1" },
        w2_t0: { status: "running" },
        w3_t0: { status: "pr_open" },
      });
      // And a task PR whose conflict waits for a person: what to do names two long branches (in its
      // row, they made it 866 px wide).
      const ws3 = "PAYMENTS_AND_MOBILE_WALLET_MIGRATION_03";
      Object.assign(state.tasks.w3_t0!, {
        pr: { number: 31, url: "https://github.com/o/r/pull/31" },
        reason: `merge \`agentrelay/caps/${ws3}/integration\` into \`agentrelay/caps/w3_t0\` by hand: they conflict in \`src/payments/mobile_wallet/migrations/0042_settlement_accounts.py\` (2 resolution attempts did not settle them)`,
        conflict: {
          files: ["src/payments/mobile_wallet/migrations/0042_settlement_accounts.py"],
          resolutions: [],
          toPerson: true,
        },
      });
      return `${statusComment(plan, state, 90_000)}\n\n---\n\n${PLAN_MARKER}\n${planSummary(plan)}`;
    },
  ],
  [
    name80,
    null,
    () => {
      // Ids may be 80 characters (graph/validate.ts); as code, which does not wrap, a table of them was
      // wider than the comment once an id passed about 35 (issue 44, item 8). One workstream id has no
      // separator at all; the graph's name is long too (branches hold it).
      const long = (stem: string, n: number) =>
        `${stem.padEnd(77, "X").slice(0, 77)}_${String(n).padStart(2, "0")}`;
      const graphName = "LEDGER_RECONCILIATION_FOR_EUROPEAN_MERCHANTS";
      const text = workstreamsGraph(3, 4, graphName)
        .replace(
          /\bws_0\b/g,
          "PAYMENTSANDMOBILEWALLETSETTLEMENTACCOUNTSMIGRATIONFOREUROPEANMERCHANTSANDBANKSXYZ".slice(0, 80),
        )
        .replace(/\bws_(\d+)\b/g, (_, n: string) =>
          long("PAYMENTS_AND_MOBILE_WALLET_SETTLEMENT_ACCOUNTS_MIGRATION_FOR_EUROPEAN_", Number(n)),
        )
        .replace(/\bw(\d+)_t(\d+)\b/g, (_, w: string, t: string) =>
          long(`RECONCILE_LEDGER_ENTRIES_WITH_BANK_STATEMENTS_AND_REPORT_EVERY_DIFFERENCE_W${w}`, Number(t)),
        );
      const task = (w: number, t: number) =>
        long(`RECONCILE_LEDGER_ENTRIES_WITH_BANK_STATEMENTS_AND_REPORT_EVERY_DIFFERENCE_W${w}`, t);
      expect(task(0, 0)).toHaveLength(80);
      const { plan, state } = runAt(text, {
        [task(0, 0)]: { status: "merged" },
        [task(1, 0)]: { status: "failed", reason: LONG_REASON },
        [task(0, 1)]: { status: "pr_open" },
        [task(1, 1)]: { status: "blocked", reason: `dependency '${task(1, 0)}' failed` },
        ...Object.fromEntries([0, 1, 2, 3].map((t) => [task(2, t), { status: "merged" as const }])),
      });
      const ws = [...plan.workstreams.keys()];
      // Lines name branches of 100 characters and more as code: a task PR's conflict left to a person
      // ("merge `…/integration` into `…` by hand"), and an integration PR no repair fixed, with the
      // command that shows it, which must copy as it is.
      const branch = (id: string) => `agentrelay/${graphName}/${id}`;
      Object.assign(state.tasks[task(0, 1)]!, {
        pr: { number: 31, url: "https://github.com/o/r/pull/31" },
        reason: `merge \`${branch(`${ws[0]}/integration`)}\` into \`${branch(task(0, 1))}\` by hand: they conflict in \`src/ledger.py\` (2 resolution attempts did not settle them)`,
        conflict: { files: ["src/ledger.py"], resolutions: [], toPerson: true },
      });
      Object.assign(state.workstreams[ws[2]!]!, {
        status: "pr_open",
        integration: "open",
        unfinished: 0,
        pr: { number: 40, url: "https://github.com/o/r/pull/40" },
        reason: "not verified: its gates fail on the tree that would land",
        verification: { runs: [], repairs: [], toPerson: true, failure: "1 failed" },
      });
      COPIED.set(name80, [reproduce(plan, ws[2]!, "origin")]);
      return [
        statusComment(plan, state, 90_000),
        `${PLAN_MARKER}\n${planSummary(plan)}`,
        integrationPrBody(plan, state, ws[0]!),
      ].join("\n\n---\n\n");
    },
  ],
  ...SCALE.map((c): [string, ScaleCase, () => string] => [
    caseName(c),
    c,
    () => {
      const { plan, state } = scaleRun(c);
      return `${statusComment(plan, state, nowOf(state), links)}\n\n---\n\n${PLAN_MARKER}\n${planSummary(plan)}`;
    },
  ]),
];

describeNeeding(
  chromium || required ? null : "no Chromium here (install Debian's chromium, or name one with CHROMIUM)",
  "comments rendered in a browser",
  () => {
    let browser: Browser;
    /** One tab for every case, mermaid loaded once (parsing its 3 MB took more CPU than drawing a case). */
    let tab: Page;
    beforeAll(async () => {
      if (!chromium && !required) return; // its tests skip, saying why
      if (!chromium) throw new Error("Chromium is required (AGENTRELAY_REQUIRE_BROWSER) but was not found");
      mkdirSync(ARTIFACTS, { recursive: true });
      browser = await puppeteer.launch({ executablePath: chromium, args: ["--no-sandbox"], headless: true });
      tab = await browser.newPage();
      await tab.setViewport(WINDOW);
      await tab.setContent(PAGE);
      await tab.addScriptTag({ path: MERMAID });
    });
    afterAll(() => browser?.close());

    async function render(name: string, markdown: string): Promise<Rendered> {
      // The case's comment replaces the last one, read from the top.
      await tab.evaluate(
        `document.querySelector(".comment").innerHTML = ${JSON.stringify(commentHtml(markdown))}; window.scrollTo(0, 0);`,
      );
      // What runs in the page is written as page script: this file is type-checked for Node, not the DOM.
      const errors = (await tab.evaluate(`(async () => {
      mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });
      const failures = [];
      for (const node of document.querySelectorAll("pre.mermaid")) {
        try {
          await mermaid.run({ nodes: [node] });
        } catch (error) {
          failures.push(String(error && error.message ? error.message : error));
        }
      }
      return failures;
    })()`)) as string[];
      const file = name.replace(/\W+/g, "-");
      await tab.screenshot({ path: join(ARTIFACTS, `${file}-first-screen.png`) });
      const closedHeight = (await tab.evaluate("document.documentElement.scrollHeight")) as number;
      const shown = (await tab.evaluate("document.body.innerText")) as string;
      // The text of the first screen: every text node that starts within it.
      const firstScreen = (await tab.evaluate(`(() => {
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      const parts = [];
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const range = document.createRange();
        range.selectNodeContents(node);
        const box = range.getBoundingClientRect();
        if (box.height > 0 && box.top < ${WINDOW.height}) parts.push(node.textContent);
      }
      return parts.join(" ");
    })()`)) as string;
      await tab.evaluate(`document.querySelectorAll("details").forEach((d) => (d.open = true))`);
      // Each chart's size, and its smallest text as drawn: the font size times the chart's scale.
      const charts = (await tab.evaluate(`[...document.querySelectorAll("pre.mermaid svg")].map((svg) => {
      const box = svg.getBoundingClientRect();
      const scale = svg.viewBox.baseVal && svg.viewBox.baseVal.width ? box.width / svg.viewBox.baseVal.width : 1;
      const texts = [...svg.querySelectorAll(".nodeLabel, .cluster-label, text")].filter((el) => el.textContent.trim());
      const sizes = texts.map((el) => parseFloat(getComputedStyle(el).fontSize) * scale);
      return { width: box.width, height: box.height, smallestTextPx: Math.min(...sizes) };
    })`)) as Rendered["charts"];
      // Nothing wider than the comment: a table row, a code block or a line a reader would scroll for
      // (a chart's own labels are drawn scaled to the chart, which is measured below).
      const tooWide = (await tab.evaluate(
        `[...document.querySelectorAll(".comment table, .comment pre, .comment p, .comment li")].filter((el) => !el.closest("pre.mermaid svg") && el.scrollWidth > ${READABLE.columnPx + 1}).map((el) => el.scrollWidth + " px: " + el.textContent.slice(0, 200))`,
      )) as string[];
      for (const [i, chart] of (await tab.$$("pre.mermaid")).entries())
        await chart.screenshot({ path: join(ARTIFACTS, `${file}-chart-${i}.png`) });
      const copied =
        (await tab.evaluate(`[...document.querySelectorAll(".comment code")].filter((el) => el.querySelector("wbr")).map((el) => {
        const range = document.createRange();
        range.selectNodeContents(el);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        return getSelection().toString();
      })`)) as string[];
      return { errors, charts, closedHeight, shown, firstScreen, tooWide, copied };
    }

    it.each(CASES)(
      "%s: every chart draws with text at least 10 px in the comment's width, what to do comes first, and the page stays bounded",
      async (name, c, markdown) => {
        const text = markdown();
        const { errors, charts, closedHeight, shown, firstScreen, tooWide, copied } = await render(
          name,
          text,
        );
        expect(tooWide).toEqual([]);
        for (const command of COPIED.get(name) ?? []) expect(copied).toContain(command);
        expect(errors).toEqual([]);
        if (name === "5 tasks by hand") {
          expect(shown).toContain(
            "Waiting for you: budget spent: $2.01 of $2.00 for the run; 2 tasks to do wait for it.",
          );
          expect(shown).toContain("Spent $2.01 of $2.00.");
          expect(shown).toContain("Budgets: the run $2.00.");
          expect(shown).toContain(
            "Resolving conflicts (an agent merges, then the PR merges again): #12: attempt 1 merges agentrelay/five/ws_0/integration into agentrelay/five/w0_t3 (src/calc.py).",
          );
          expect(shown).toMatch(/w0_t3\s+resolving conflicts/);
        }
        // What to do next is on the first screen: every kind of "waiting for you" line, the failures
        // first among them (30 merges do not push them off).
        if (shown.includes("Waiting for you")) expect(firstScreen).toContain("Waiting for you");
        if (/blocked by \d+ failures?/.test(shown))
          expect(firstScreen).toMatch(/blocked by [\d,]+ failures?/);
        if (c?.autoMerge === false) expect(firstScreen).toMatch(/more integration PRs to merge/);
        // Verified runs say the branch no repair fixed as not to merge, and what each merged result cost.
        if (c?.verify) {
          expect(shown).toMatch(/ws_2\s*into\s*main\s*\): not verified: its gates fail/);
          expect(shown).toMatch(/Cost per merged task \$[\d.]+ \([\d,]+ merged\), per landed workstream/);
        }
        // Running runs say what runs.
        if (c?.maxEvents) expect(firstScreen).toMatch(/Waiting for \d+ jobs?/);
        const blocks = text.split("```mermaid").length - 1;
        expect(charts).toHaveLength(blocks);
        for (const chart of charts) {
          expect(chart.width).toBeLessThanOrEqual(READABLE.columnPx + 1);
          expect(chart.height).toBeGreaterThan(20);
          expect(chart.height).toBeLessThan(6_000);
          expect(chart.smallestTextPx).toBeGreaterThanOrEqual(READABLE.minPx);
        }
        // The status comment's chart comes with its legend.
        const status = text.slice(0, text.indexOf(PLAN_MARKER));
        if (status.includes("```mermaid"))
          expect(status).toMatch(/```\n\n_Outlines: red, failed \(retry it\); amber, waits for you/);
        expect(closedHeight).toBeLessThan(12_000);
      },
    );
  },
);

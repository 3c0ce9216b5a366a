/**
 * What people read on GitHub, as they see it: markdown rendered as GitHub flavours it (marked, GFM)
 * with its mermaid blocks drawn by mermaid in headless Chromium, in a 1280 px window. Runs of 5, 300,
 * 3,000 and 10,000 tasks in 2 to 120 workstreams are simulated to the end (or stopped mid-way) with
 * failures, blocked tasks, a conflict left to a person and a spent budget; their status comment, plan
 * comment and an integration PR body must tell the truth: the headline's state, every blocked task
 * counted with its root cause, nothing cut inside a word, what to do next on the first screen, chart
 * text at least 10 px high, everything within GitHub's limits. Screenshots are kept in
 * test-artifacts/render/ (not committed).
 *
 * Needs Chromium (Debian's `chromium`; `CHROMIUM` names another); `.ci/run` installs it and sets
 * AGENTRELAY_REQUIRE_BROWSER, which turns a missing browser into a failure instead of a skip.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { marked } from "marked";
import puppeteer, { type Browser } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { simulate } from "../../src/engine/simulate.ts";
import type { RunState } from "../../src/engine/types.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { fit, LIMITS } from "../../src/github/limits.ts";
import { integrationPrBody, PLAN_MARKER, planSummary } from "../../src/github/render.ts";
import { statusComment } from "../../src/github/status-comment.ts";
import { READABLE } from "../../src/plan/mermaid.ts";
import { buildPlan, type Plan } from "../../src/plan/plan.ts";
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
/** A 1280 px window; GitHub's comment column in it (READABLE.columnPx), and the first screen's height. */
const WINDOW = { width: 1280, height: 800 };

const page = (markdown: string) => {
  const html = (marked.parse(markdown, { gfm: true, async: false }) as string).replace(
    /<pre><code class="language-mermaid">([\s\S]*?)<\/code><\/pre>/g,
    '<pre class="mermaid">$1</pre>',
  );
  return `<!doctype html><html><head><meta charset="utf-8"><style>
    body { width: ${READABLE.columnPx}px; margin: 16px; font: 14px -apple-system, "Segoe UI", sans-serif; }
    table { border-collapse: collapse; } td, th { border: 1px solid #d0d7de; padding: 4px 8px; }
  </style></head><body>${html}</body></html>`;
};

interface Rendered {
  errors: string[];
  charts: { width: number; height: number; smallestTextPx: number }[];
  closedHeight: number;
  /** The page's text as shown (details closed). */
  shown: string;
  /** The text within the first screen. */
  firstScreen: string;
}

/** A simulated run at scale: the graph, its plan, and the state at the end (or after `maxEvents`). */
interface ScaleCase {
  tasks: number;
  workstreams: number;
  budget: number;
  maxEvents?: number;
  /** The state the headline must give. */
  phase: string;
}

const SCALE: ScaleCase[] = [
  { tasks: 5, workstreams: 3, budget: 2.25, phase: "waiting for budget and for you" },
  { tasks: 5, workstreams: 2, budget: 10, maxEvents: 9, phase: "running" },
  { tasks: 300, workstreams: 10, budget: 60, phase: "waiting for budget and for you" },
  { tasks: 3_000, workstreams: 40, budget: 1_000, maxEvents: 2_500, phase: "running, waiting for you" },
  { tasks: 10_000, workstreams: 120, budget: 2_000, phase: "waiting for budget and for you" },
];

const caseName = (c: ScaleCase) =>
  `${c.tasks.toLocaleString("en-US")} tasks in ${c.workstreams} workstreams${c.maxEvents ? ", mid-run" : ""}`;

/** A failure reason as long as a real gate's: long enough to be cut. */
const LONG_REASON =
  "Completion gate failed after 5 attempt(s): pytest -q tests/test_module.py::test_round_trip_keeps_unicode_names exited 1; the last lines said AssertionError: expected the parsed document to keep every heading and its anchors";

const runs = new Map<ScaleCase, { plan: Plan; state: RunState }>();
function scaleRun(c: ScaleCase): { plan: Plan; state: RunState } {
  if (!runs.has(c)) {
    const graph = parseGraph("scale.yaml", scaleGraph(c.tasks, c.workstreams, c.budget), {
      limits: { maxBytes: 64 << 20 },
    });
    const { state } = simulate(graph, {
      ...scaleWorld(c.tasks, c.workstreams),
      ...(c.maxEvents ? { maxEvents: c.maxEvents } : {}),
    });
    for (const t of Object.values(state.tasks)) if (t.status === "failed") t.reason = LONG_REASON;
    runs.set(c, { plan: buildPlan(graph), state });
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

/** Every word a cut can end on: the words of the texts the comment quotes. */
function wordsOf(plan: Plan, state: RunState): Set<string> {
  const texts = [
    ...plan.graph.tasks.map((t) => t.description ?? ""),
    ...Object.values(state.tasks).map((t) => t.reason ?? ""),
    ...Object.values(state.workstreams).map((w) => w.reason ?? ""),
    ...Object.values(state.budget?.spent ?? {}),
  ];
  return new Set(texts.flatMap((t) => t.split(/\s+/)));
}

describe("runs at scale, as their comments say", () => {
  it.each(SCALE.map((c) => [caseName(c), c] as const))(
    "%s: the headline's state, every blocked task with its root, whole words, GitHub's limits",
    (_, c) => {
      const { plan, state } = scaleRun(c);
      const body = statusComment(plan, state, nowOf(state), links);
      expect(body).toContain(`### agentrelay run \`scale-${c.tasks}/1\`: ${c.phase} (`);
      // Within GitHub's limits, and nothing the request hook would have to cut.
      expect(body.length).toBeLessThanOrEqual(LIMITS.body);
      expect(fit(body, LIMITS.body)).toBe(body);
      const plans = planSummary(plan);
      expect(plans.length).toBeLessThanOrEqual(LIMITS.body);
      expect(integrationPrBody(plan, state, "ws_0").length).toBeLessThanOrEqual(LIMITS.body);
      for (const text of [body, plans]) {
        const edges = text.split("\n").filter((l) => /-->|-\.->|~~~/.test(l)).length;
        expect(edges).toBeLessThan(500);
      }

      // Every blocked task is counted, under the failure its reasons lead to.
      const blocked = Object.entries(state.tasks).filter(([, t]) => t.status === "blocked");
      const failed = Object.values(state.tasks).filter((t) => t.status === "failed").length;
      if (blocked.length > 0)
        expect(body).toContain(
          `**Waiting for you**: ${blocked.length.toLocaleString("en-US")} task${blocked.length > 1 ? "s" : ""} blocked by ${failed} failure`,
        );
      const groups = [...body.matchAll(/^- ([\d,]+) tasks? blocked by `([^`]+)` failed/gm)];
      expect(groups.reduce((n, g) => n + Number(g[1]!.replace(/,/g, "")), 0)).toBe(blocked.length);
      const expected = new Map<string, number>();
      for (const [id] of blocked)
        expected.set(rootByReasons(state, id), (expected.get(rootByReasons(state, id)) ?? 0) + 1);
      expect(new Map(groups.map((g) => [g[2]!, Number(g[1]!.replace(/,/g, ""))]))).toEqual(expected);
      // What waits for the budget is counted too.
      const pending = Object.values(state.tasks).filter((t) => t.status === "pending").length;
      if (c.phase.includes("budget"))
        expect(body).toMatch(
          new RegExp(`for the run[^;]*; ${pending.toLocaleString("en-US")} tasks? waits? for it`),
        );

      // Cuts end on a whole word of the text they cut, with a marker.
      const words = wordsOf(plan, state);
      const cuts = [...body.matchAll(/(\S+) …/g)].map((m) => m[1]!);
      expect(cuts.length).toBeGreaterThan(failed > 0 ? 0 : -1);
      for (const word of cuts) expect(words, `cut after "${word}"`).toContain(word);
      // Words, not enum names.
      expect(body).not.toMatch(/\bpr_open\b|\bmerge_ready\b|\bpending\b/);
    },
    60_000,
  );
});

const CASES: [string, () => string][] = [
  [
    "5 tasks by hand",
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
            { n: 1, dispatchedAt: 0, job: "77", outcome: null, reason: null, costUsd: null, turns: null },
          ],
        },
      });
      return `${statusComment(plan, state, 90_000)}\n\n---\n\n${PLAN_MARKER}\n${planSummary(plan)}`;
    },
  ],
  ...SCALE.map((c): [string, () => string] => [
    caseName(c),
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
    beforeAll(async () => {
      if (!chromium && !required) return; // its tests skip, saying why
      if (!chromium) throw new Error("Chromium is required (AGENTRELAY_REQUIRE_BROWSER) but was not found");
      mkdirSync(ARTIFACTS, { recursive: true });
      browser = await puppeteer.launch({ executablePath: chromium, args: ["--no-sandbox"], headless: true });
    }, 60_000);
    afterAll(() => browser?.close());

    async function render(name: string, markdown: string): Promise<Rendered> {
      const tab = await browser.newPage();
      try {
        await tab.setViewport(WINDOW);
        await tab.setContent(page(markdown));
        await tab.addScriptTag({ path: MERMAID });
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
        for (const [i, chart] of (await tab.$$("pre.mermaid")).entries())
          await chart.screenshot({ path: join(ARTIFACTS, `${file}-chart-${i}.png`) });
        return { errors, charts, closedHeight, shown, firstScreen };
      } finally {
        await tab.close();
      }
    }

    it.each(CASES)(
      "%s: every chart draws with text at least 10 px, what to do comes first, and the page stays bounded",
      async (name, markdown) => {
        const text = markdown();
        const { errors, charts, closedHeight, shown, firstScreen } = await render(name, text);
        expect(errors).toEqual([]);
        if (name === "5 tasks by hand") {
          expect(shown).toContain(
            "Waiting for you: budget spent: $2.01 of $2.00 for the run; 2 tasks wait for it.",
          );
          expect(shown).toContain("Spent $2.01 of $2.00.");
          expect(shown).toContain("Budgets: the run $2.00.");
          expect(shown).toContain(
            "Resolving conflicts (an agent merges, then the PR merges again): #12: attempt 1 merges agentrelay/five/ws_0/integration into agentrelay/five/w0_t3 (src/calc.py).",
          );
          expect(shown).toMatch(/w0_t3\s+resolving conflicts/);
        }
        // What to do next is on the first screen.
        if (shown.includes("Waiting for you")) expect(firstScreen).toContain("Waiting for you");
        const blocks = text.split("```mermaid").length - 1;
        expect(charts).toHaveLength(blocks);
        for (const chart of charts) {
          expect(chart.height).toBeGreaterThan(20);
          expect(chart.height).toBeLessThan(6_000);
          expect(chart.smallestTextPx).toBeGreaterThanOrEqual(READABLE.minPx);
        }
        expect(closedHeight).toBeLessThan(12_000);
      },
      120_000,
    );
  },
);

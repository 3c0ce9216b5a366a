/**
 * The plan and status comments as a person sees them: markdown rendered as GitHub flavours it
 * (marked, GFM) with its mermaid blocks drawn by mermaid in headless Chromium, at 5, 300 and 10,000
 * tasks. No chart may fail to draw, no chart may grow past a readable size, and the page as first
 * seen (details closed) stays bounded. Screenshots are kept in test-artifacts/render/ (not committed).
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
import { generateGraph } from "../../bench/graph-scale.ts";
import { PLAN_MARKER, planSummary } from "../../src/github/render.ts";
import { statusComment } from "../../src/github/status-comment.ts";
import { REPO_ROOT } from "../support/fixtures.ts";
import { runAt, workstreamsGraph } from "../support/runs.ts";

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

/** GitHub's comment column is about 900 pixels wide. */
const page = (markdown: string) => {
  const html = (marked.parse(markdown, { gfm: true, async: false }) as string).replace(
    /<pre><code class="language-mermaid">([\s\S]*?)<\/code><\/pre>/g,
    '<pre class="mermaid">$1</pre>',
  );
  return `<!doctype html><html><head><meta charset="utf-8"><style>
    body { width: 900px; margin: 16px; font: 14px -apple-system, "Segoe UI", sans-serif; }
    table { border-collapse: collapse; } td, th { border: 1px solid #d0d7de; padding: 4px 8px; }
  </style></head><body>${html}</body></html>`;
};

interface Rendered {
  errors: string[];
  charts: { width: number; height: number }[];
  closedHeight: number;
  /** The page's text as shown. */
  shown: string;
}

const CASES: [string, () => string][] = [
  [
    "5 tasks",
    () => {
      // With a budget, spent: the status says so, and the plan lists it.
      const text = workstreamsGraph(1, 5, "five").replace("workstreams:", "max_cost_usd: 2\nworkstreams:");
      const { plan, state } = runAt(text, {
        w0_t0: { status: "merged" },
        w0_t1: { status: "failed", reason: "Completion gate failed after 5 attempt(s): pytest -q" },
      });
      state.budget = {
        run: { spentUsd: 2.01, reservedUsd: 0, raisedUsd: 0 },
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
  [
    "300 tasks",
    () => {
      const { plan, state } = runAt(workstreamsGraph(10, 30, "wide"), {
        w3_t4: { status: "failed", reason: "tests failed" },
        w7_t0: { status: "running" },
      });
      return `${statusComment(plan, state, 90_000)}\n\n---\n\n${PLAN_MARKER}\n${planSummary(plan)}`;
    },
  ],
  [
    "10000 tasks",
    () => {
      const { plan, state } = runAt(generateGraph(10_000), {
        t9000: { status: "failed", reason: "tests failed" },
        t9001: { status: "running" },
      });
      return `${statusComment(plan, state, 90_000)}\n\n---\n\n${PLAN_MARKER}\n${planSummary(plan)}`;
    },
  ],
];

describe.skipIf(!chromium && !required)("comments rendered in a browser", () => {
  let browser: Browser;
  beforeAll(async () => {
    if (!chromium) throw new Error("Chromium is required (AGENTRELAY_REQUIRE_BROWSER) but was not found");
    mkdirSync(ARTIFACTS, { recursive: true });
    browser = await puppeteer.launch({ executablePath: chromium, args: ["--no-sandbox"], headless: true });
  }, 60_000);
  afterAll(() => browser?.close());

  async function render(name: string, markdown: string): Promise<Rendered> {
    const tab = await browser.newPage();
    try {
      await tab.setViewport({ width: 940, height: 900 });
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
      await tab.screenshot({ path: join(ARTIFACTS, `${file}.png`), fullPage: true });
      const closedHeight = (await tab.evaluate("document.documentElement.scrollHeight")) as number;
      const shown = (await tab.evaluate("document.body.innerText")) as string;
      await tab.evaluate(`document.querySelectorAll("details").forEach((d) => (d.open = true))`);
      const charts = await tab.$$eval("pre.mermaid svg", (svgs) =>
        svgs.map((s) => {
          const box = s.getBoundingClientRect();
          return { width: box.width, height: box.height };
        }),
      );
      for (const [i, chart] of (await tab.$$("pre.mermaid")).entries())
        await chart.screenshot({ path: join(ARTIFACTS, `${file}-chart-${i}.png`) });
      return { errors, charts, closedHeight, shown };
    } finally {
      await tab.close();
    }
  }

  it.each(CASES)(
    "%s: every chart draws, readably, and the page stays bounded",
    async (name, markdown) => {
      const text = markdown();
      const { errors, charts, closedHeight, shown } = await render(name, text);
      expect(errors).toEqual([]);
      if (name === "5 tasks") {
        expect(shown).toContain("Waiting for you: budget spent: $2.01 of $2.00 for the run.");
        expect(shown).toContain("Spent $2.01 of $2.00.");
        expect(shown).toContain("Budgets: the run $2.00.");
        expect(shown).toContain(
          "Resolving conflicts (an agent merges, then the PR merges again): #12: attempt 1 merges agentrelay/five/ws_0/integration into agentrelay/five/w0_t3 (src/calc.py).",
        );
        expect(shown).toMatch(/w0_t3\s+resolving conflicts/);
      }
      const blocks = text.split("```mermaid").length - 1;
      expect(charts).toHaveLength(blocks);
      for (const chart of charts) {
        expect(chart.height).toBeGreaterThan(20);
        expect(chart.height).toBeLessThan(6_000);
      }
      expect(closedHeight).toBeLessThan(12_000);
    },
    120_000,
  );
});

/**
 * The README and the pages under docs/ stay honest: the graph example is valid, the test command is
 * the one CI runs, every relative link leads to a file (and a heading) that exists, and prose and
 * tables stay readable in source.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { parseGraph } from "../src/graph/load.ts";
import { TESTED_CLAUDE_CODE } from "../src/attempt/preflight.ts";
import { canonicalOrder } from "../src/plan/plan.ts";
import { REPO_ROOT } from "./support/fixtures.ts";

const read = (path: string) => readFileSync(join(REPO_ROOT, path), "utf8");
const pages = ["README.md", ...readdirSync(join(REPO_ROOT, "docs")).map((name) => `docs/${name}`)];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");

const anchorsOf = (markdown: string) =>
  new Set([...markdown.matchAll(/^#+ (.*)$/gm)].map((m) => anchorOf(m[1]!)));

/** The page's text outside fenced code blocks. */
const prose = (markdown: string) => markdown.replace(/^```[\s\S]*?^```/gm, "");

describe("README and docs", () => {
  it("show a graph example that is valid", () => {
    const example = /```yaml\n([\s\S]*?)```/.exec(read("docs/graph-language.md"))![1]!;
    const graph = parseGraph("docs/graph-language.md", example);
    expect(canonicalOrder(graph)).toEqual(["spec", "impl", "docs"]);
    expect(graph.tasks[2]!.primaryAgent.isolation.tokenTier).toBe("read_only");
  });

  it("name the test command that .ci/run runs", () => {
    expect(read("README.md")).toContain("npm ci && npm test");
    expect(read(".ci/run")).toContain("npm test");
  });

  it("link only to files and headings that exist", () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const [, target] of prose(read(page)).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [path, anchor] = target!.split("#");
        const file = path ? join(dirname(join(REPO_ROOT, page)), path) : join(REPO_ROOT, page);
        if (!existsSync(file)) broken.push(`${page}: ${target} (no file)`);
        else if (anchor && file.endsWith(".md") && !anchorsOf(readFileSync(file, "utf8")).has(anchor))
          broken.push(`${page}: ${target} (no heading in ${relative(REPO_ROOT, file)})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("keep prose and tables within a screen's width in source", () => {
    const wide = pages.flatMap((page) =>
      prose(read(page))
        .split("\n")
        .filter((line) => line.length > 160)
        .map((line) => `${page}: ${line.slice(0, 60)}…`),
    );
    expect(wide).toEqual([]);
  });

  it("never send a user to npm's `agentrelay` (not this project's), nor call an app they host 'the hosted app'", () => {
    const texts = [
      ...pages,
      ...readdirSync(join(REPO_ROOT, "templates/workflows"), { recursive: true, encoding: "utf8" })
        .filter((f) => f.endsWith(".yml"))
        .map((f) => `templates/workflows/${f}`),
      "templates/sample-graph.yaml",
      ...readdirSync(join(REPO_ROOT, "src/cli"), { recursive: true, encoding: "utf8" })
        .filter((f) => f.endsWith(".ts"))
        .map((f) => `src/cli/${f}`),
    ];
    const found = texts.flatMap((path) =>
      // Only where they say never to.
      [...read(path).matchAll(/(?<!never\s`)npx agentrelay|the hosted app/gi)].map((m) => `${path}: ${m[0]}`),
    );
    expect(found).toEqual([]);
  });

  it("pin the Claude Code a user installs to the version the tests and the agent image run", () => {
    const pinned = JSON.parse(read("package.json")).devDependencies["@anthropic-ai/claude-code"] as string;
    const installs = [
      ...read("README.md").matchAll(/npm install -g (@anthropic-ai\/claude-code\S*?)[`\s)]/g),
    ];
    expect(installs.map((m) => m[1])).toEqual([`@anthropic-ai/claude-code@${pinned}`]);
    // What the command line tells a user to install, and what its docs quote of it, are the same one.
    expect(TESTED_CLAUDE_CODE).toBe(pinned);
    const elsewhere = [
      ...read("docs/cli.md").matchAll(/npm install -g (@anthropic-ai\/claude-code\S*?)[`\s)]/g),
    ];
    expect(elsewhere.map((m) => m[1])).toEqual([`@anthropic-ai/claude-code@${pinned}`]);
  });

  it("leave the README to what a newcomer needs", () => {
    expect(read("README.md").split("\n").length).toBeLessThan(120);
  });
});

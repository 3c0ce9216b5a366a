/**
 * The shape of the code, so that it stays: a core that imports no host, adapters that import the
 * core but not each other, and the two entry points (the app, the command line) that put them
 * together. Read from the sources' relative imports.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./support/fixtures.ts";

const SRC = join(REPO_ROOT, "src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.ts$/.test(name) && !name.endsWith(".d.ts") ? [path] : [];
  });
}

interface Import {
  from: string;
  to: string;
  /** `import type`: erased, no dependency when the code runs. */
  typeOnly: boolean;
}

function imports(): Import[] {
  return sourceFiles(SRC).flatMap((file) =>
    [
      ...readFileSync(file, "utf8").matchAll(
        /^(?:import|export)\s+(type\s+)?(?:[^;]*?\sfrom\s+)?["'](\.{1,2}\/[^"']+)["']/gms,
      ),
    ].map((m) => ({ from: file, to: resolve(dirname(file), m[2]!), typeOnly: Boolean(m[1]) })),
  );
}

const folderOf = (path: string) => relative(SRC, path).split("/")[0]!;

/** What each folder may import (besides itself). */
const ALLOWED: Record<string, string[]> = {
  // The functional core: no GitHub, no git, no processes of the host.
  template: [],
  graph: ["template"],
  plan: ["graph"],
  engine: ["graph", "plan"],
  protocol: ["graph", "plan", "engine", "template"],
  // The attempt runner: host-neutral (the Action and local mode both run it).
  attempt: ["graph", "plan", "engine", "protocol", "template"],
  // Test doubles that are also the demo's product: stand-alone.
  scripted: [],
  // Adapters: the core and the attempt runner, never one another.
  github: ["graph", "plan", "engine", "protocol", "template", "attempt"],
  local: ["graph", "plan", "engine", "protocol", "template", "attempt"],
  action: ["graph", "plan", "engine", "protocol", "template", "attempt"],
  // Entry points: the app wires the GitHub adapter into Probot, the CLI wires local mode to a terminal.
  app: ["graph", "plan", "engine", "protocol", "template", "github"],
  // (and shows what GitHub would: `simulate --markdown` prints the run's status comment).
  cli: ["graph", "plan", "engine", "protocol", "template", "attempt", "local", "scripted", "github"],
};

describe("the shape of the code", () => {
  const all = imports();

  it("reads the imports of every source folder", () => {
    const folders = new Set(sourceFiles(SRC).map(folderOf));
    expect([...folders].sort()).toEqual(Object.keys(ALLOWED).sort());
    expect(all.length).toBeGreaterThan(100);
  });

  it("keeps the core free of hosts and adapters apart", () => {
    const broken = all
      .filter(
        ({ from, to }) =>
          folderOf(from) !== folderOf(to) &&
          !ALLOWED[folderOf(from)]!.includes(folderOf(to)) &&
          // The CLI reads its version from the package's manifest.
          !(folderOf(from) === "cli" && to === join(SRC, "..", "package.json")),
      )
      .map(({ from, to }) => `${relative(SRC, from)} imports ${relative(SRC, to)}`);
    expect(broken).toEqual([]);
  });

  it("has no import cycles among modules (type-only imports aside)", () => {
    const edges = new Map<string, string[]>();
    for (const { from, to, typeOnly } of all)
      if (!typeOnly) edges.set(from, [...(edges.get(from) ?? []), to]);
    const state = new Map<string, "open" | "done">();
    const cycles: string[] = [];
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "open") {
        cycles.push([...path.slice(path.indexOf(file)), file].map((f) => relative(SRC, f)).join(" -> "));
        return;
      }
      state.set(file, "open");
      for (const next of edges.get(file) ?? []) visit(next, [...path, file]);
      state.set(file, "done");
    };
    for (const file of edges.keys()) visit(file, []);
    expect(cycles).toEqual([]);
  });
});

/**
 * The shape of the code, so that it stays: a core that imports no host, adapters that import the
 * core but not each other, and the two entry points (the app, the command line) that put them
 * together. Read from the sources' relative imports.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./support/fixtures.ts";

const SRC = join(REPO_ROOT, "src");
const HARNESS = join(REPO_ROOT, "harness");

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
}

/**
 * A file's relative imports, every kind: `import` and `export … from` (type-only ones too: they tie
 * the modules together for a reader, if not when the code runs), bare `import "…"`, and dynamic
 * `import("…")`.
 */
const IMPORT_FORMS = [
  /^\s*(?:import|export)\b[^;'"]*?\bfrom\s*["'](\.{1,2}\/[^"']+)["']/gm,
  /^\s*import\s*["'](\.{1,2}\/[^"']+)["']/gm,
  /\bimport\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g,
];

function importsOf(files: string[]): Import[] {
  return files.flatMap((file) => {
    const text = readFileSync(file, "utf8");
    return IMPORT_FORMS.flatMap((form) =>
      [...text.matchAll(form)].map((m) => ({ from: file, to: resolve(dirname(file), m[1]!) })),
    );
  });
}

/** The import circles among `files`: each set of two or more files that import one another, sorted. */
function importCircles(files: string[]): string[][] {
  const known = new Set(files);
  const edges = new Map<string, string[]>(files.map((f) => [f, []]));
  for (const { from, to } of importsOf(files)) if (known.has(to) && to !== from) edges.get(from)!.push(to);
  // Tarjan's strongly connected components.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const connect = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of edges.get(file)!) {
      if (!index.has(next)) {
        connect(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const circle: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      circle.push(member);
    } while (member !== file);
    if (circle.length > 1) circles.push(circle.map((f) => relative(REPO_ROOT, f)).sort());
  };
  for (const file of files) if (!index.has(file)) connect(file);
  return circles;
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
  const all = importsOf(sourceFiles(SRC));

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

  it("has no import circle in src/ or harness/, type-only and dynamic imports included", () => {
    expect(importCircles([...sourceFiles(SRC), ...sourceFiles(HARNESS)])).toEqual([]);
  });

  it("keeps every file of src/ and harness/ under 500 lines", () => {
    const long = [...sourceFiles(SRC), ...sourceFiles(HARNESS)]
      .map((file) => [relative(REPO_ROOT, file), readFileSync(file, "utf8").split("\n").length - 1] as const)
      .filter(([, lines]) => lines > 500);
    expect(long).toEqual([]);
  });

  it("finds a circle however the files import each other", () => {
    const dir = mkdtempSync(join(tmpdir(), "agentrelay-circles-"));
    const write = (name: string, text: string) => writeFileSync(join(dir, name), text);
    write("a.ts", 'import type { B } from "./b.ts";\nexport type A = B;\n');
    write("b.ts", 'export type B = 1;\nexport const c = () => import("./c.ts");\n');
    write("c.ts", 'export {\n  A,\n} from "./a.ts";\n');
    write("d.ts", 'import "./e.ts";\n');
    write("e.ts", 'import { f } from "./d.ts";\n');
    write("f.ts", 'import { a } from "./a.ts";\n');
    const circles = importCircles(sourceFiles(dir)).map((c) => c.map((f) => basename(f)));
    rmSync(dir, { recursive: true });
    expect(circles.sort()).toEqual([
      ["a.ts", "b.ts", "c.ts"],
      ["d.ts", "e.ts"],
    ]);
  });
});

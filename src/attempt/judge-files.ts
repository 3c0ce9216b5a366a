/**
 * Which files of a tree judge it, by what they are and by what names them: the tests (the graph's
 * `test_paths`, else the usual names), the test runners' configurations, the programs a gate command
 * runs, and, followed from those, every program or setup file they name (a script an `npm test`
 * script calls, a setup file a runner's configuration names, a script a Makefile target runs). Names
 * are the second line of defence: a repair may not change a file neither side changed at all
 * (landing-guards.ts), so these rules matter for the files one side did change.
 */
import { posix } from "node:path";
import type { CheckoutGit } from "./git.ts";

/** What judges a tree: the commands its gates run, and where its tests are (null: the usual names). */
export interface Judges {
  gates: readonly string[];
  testPaths?: readonly string[] | null;
}

const TEST_DIR = /(^|\/)(test|tests|__tests__|spec|specs)\//;
const TEST_NAME = /(\.(test|spec)\.[cm]?[jt]sx?$)|((^|\/)test_[^/]*\.py$)|(_test\.(py|go)$)|(_spec\.rb$)/;
/**
 * Files that decide what a test runner runs and what counts as passing, or that the language loads
 * before any test (`sitecustomize.py`, `.npmrc`'s `script-shell`).
 */
const RUNNER_CONFIG =
  /^((vitest|jest|vite|mocha|ava|karma|playwright|cypress)\.(config|setup)\.[cm]?[jt]s(on)?|(vitest|jest)\.workspace\.[cm]?[jt]s(on)?|setupTests\.[cm]?[jt]sx?|\.mocharc(\.[a-z]+)?|karma\.conf\.js|pytest\.ini|tox\.ini|setup\.cfg|noxfile\.py|conftest\.py|sitecustomize\.py|usercustomize\.py|\.npmrc|\.yarnrc(\.yml)?|bunfig\.toml|\.nycrc(\.[a-z]+)?|phpunit\.xml(\.dist)?)$/;
/** package.json's keys that decide what `npm test` and the runners do. */
const PACKAGE_KEYS = ["scripts", "jest", "mocha", "ava", "vitest"];
/** pyproject.toml's tables that decide what a runner runs (`[tool.pytest.ini_options]`'s addopts, ...). */
const PYPROJECT_TABLE = /^\[+\s*tool\.(pytest|tox|nox|hatch|poe|coverage|unittest|ward)\b/;

const under = (paths: readonly string[], path: string) =>
  paths.some((p) => {
    const dir = p.replace(/^\.\//, "").replace(/\/+$/, "");
    return path === dir || path.startsWith(`${dir}/`);
  });

/** Whether `path` is a test file of the tree. */
export function isTest(path: string, testPaths?: readonly string[] | null): boolean {
  return testPaths?.length ? under(testPaths, path) : TEST_DIR.test(path) || TEST_NAME.test(path);
}

export const isRunnerConfig = (path: string): boolean => RUNNER_CONFIG.test(posix.basename(path));

/** A program by its name: what a gate names with one of these runs, rather than being read. */
const SCRIPT = /\.(sh|bash|zsh|[cm]?js|[cm]?ts|py|rb|pl|php)$/;

/**
 * The repository's programs a gate command runs: a script it names (`./check.sh`, `node
 * scripts/run-tests.js`, `bash ci/test`), the Makefile of `make`, the package.json of `npm test`. A
 * data file it reads (`test -s out.txt`) is not one.
 */
export function gateFiles(gates: readonly string[]): Set<string> {
  const files = new Set<string>();
  for (const command of gates) {
    for (const segment of command.split(/&&|\|\||[;|()\n]/)) {
      const words = segment
        .trim()
        .split(/\s+/)
        .map((w) => w.replace(/^['"]|['"]$/g, ""));
      words.forEach((word, i) => {
        if (word === "make") ["Makefile", "makefile", "GNUmakefile"].forEach((f) => files.add(f));
        if (/^(npm|yarn|pnpm|bun)$/.test(word)) files.add("package.json");
        if (!word || word.startsWith("-") || word.includes("$") || word.startsWith("/")) return;
        const path = posix.normalize(word.replace(/^\.\//, ""));
        if (SCRIPT.test(word) || (i === 0 && word.includes("/"))) files.add(path);
      });
    }
  }
  return files;
}

export const PACKAGE_JSON = /(^|\/)package\.json$/;
export const PYPROJECT = /(^|\/)pyproject\.toml$/;

/** What of a package.json judges the tests (its scripts, the runners' settings), comparable as text. */
export function packageJudges(text: string | null | undefined): string {
  try {
    const json = JSON.parse(text ?? "{}") as Record<string, unknown>;
    return JSON.stringify(PACKAGE_KEYS.map((k) => json[k] ?? null));
  } catch {
    return "(not JSON)";
  }
}

/** The tables of a pyproject.toml that configure a test runner, as text (the rest is the project's). */
export function pyprojectJudges(text: string | null | undefined): string {
  let judged = false;
  const kept: string[] = [];
  for (const line of (text ?? "").split("\n")) {
    if (/^\s*\[/.test(line)) judged = PYPROJECT_TABLE.test(line.trim());
    if (judged && line.trim() && !line.trim().startsWith("#")) kept.push(line.trim());
  }
  return kept.join("\n");
}

/** The part of a file that judges, when only part of it does (package.json, pyproject.toml). */
export function judgedPart(path: string, text: string | null | undefined): string | null {
  if (PACKAGE_JSON.test(path)) return packageJudges(text);
  if (PYPROJECT.test(path)) return pyprojectJudges(text);
  return null;
}

/** Reads blobs by id (null for an absent one). */
export async function readBlobs(checkout: CheckoutGit, ids: readonly string[]): Promise<(string | null)[]> {
  const wanted = ids.filter((id) => !/^0+$/.test(id));
  const texts = new Map<string, string | null>();
  let i = 0;
  for await (const blob of checkout.blobs(wanted))
    texts.set(wanted[i++]!, blob ? blob.toString("utf8") : null);
  return ids.map((id) => texts.get(id) ?? null);
}

/** A configuration a judge names (`jest --config ci/jest.json`, a reporter's settings). */
const CONFIG = /\.(json|toml|ini|cfg|ya?ml)$/;
/** How far judges are followed (a gate's script that calls a script that sources a file). */
const DEPTH = 4;
/** A judge longer than this is not read for the files it names. */
const MAX_JUDGE_BYTES = 512 * 1024;
/** How a file is named without its extension (`require("./setup")`, `. ./env`). */
const EXTENSIONS = ["", ".js", ".cjs", ".mjs", ".ts", ".sh", ".py"];

/**
 * The files of `tree` that judge it other than its tests: those named as above, and the programs and
 * setup files they name (a path in their text that is a file of the tree: a script, an executable, a
 * runner's configuration), followed a few levels. What a test file names (the code it tests) is not
 * followed: that is what a repair fixes.
 */
export async function judgeFilesOf(
  checkout: CheckoutGit,
  tree: string,
  judges: Judges,
): Promise<Set<string>> {
  const entries = new Map<string, { mode: string; id: string }>();
  for (const line of (await checkout.git(["ls-tree", "-r", "-z", "--full-tree", tree])).split("\0")) {
    const m = /^(\d+) blob ([0-9a-f]+)\t(.+)$/s.exec(line);
    if (m) entries.set(m[3]!, { mode: m[1]!, id: m[2]! });
  }
  const named = gateFiles(judges.gates);
  const program = (path: string) =>
    SCRIPT.test(path) || CONFIG.test(path) || isRunnerConfig(path) || entries.get(path)?.mode === "100755";
  const found = new Set(
    [...entries.keys()].filter(
      (p) => named.has(p) || isRunnerConfig(p) || PACKAGE_JSON.test(p) || PYPROJECT.test(p),
    ),
  );
  // A test the gate runs by name is judged as a test; what it names is the code it tests.
  let frontier = [...found].filter((p) => !isTest(p, judges.testPaths));
  for (let depth = 0; depth < DEPTH && frontier.length > 0; depth++) {
    const texts = await readBlobs(
      checkout,
      frontier.map((p) => entries.get(p)!.id),
    );
    const next: string[] = [];
    frontier.forEach((judge, i) => {
      const text = texts[i];
      if (text == null || text.length > MAX_JUDGE_BYTES) return;
      // Source code a judge runs is a judge, but what it imports is the code it tests, not followed.
      if (SOURCE.test(judge) && !isRunnerConfig(judge)) return;
      const judging = PACKAGE_JSON.test(judge)
        ? scriptsRun(text, judges.gates)
        : (judgedPart(judge, text) ?? text);
      // The files it names, and what it runs as a command would (`make`: the Makefile).
      const names = new Set([...namedIn(judging, posix.dirname(judge)), ...gateFiles([judging])]);
      for (const path of names) {
        for (const ext of EXTENSIONS) {
          const file = `${path}${ext}`;
          if (!entries.has(file) || found.has(file) || isTest(file, judges.testPaths) || !program(file))
            continue;
          found.add(file);
          next.push(file);
        }
      }
    });
    frontier = next;
  }
  return found;
}

/** A program in a language with imports (what it names is code, unless it is a runner's configuration). */
const SOURCE = /\.([cm]?[jt]sx?|py|rb|php)$/;

/**
 * What of a package.json the gates run: the scripts `npm test` or `npm run x` (yarn, pnpm, bun) starts,
 * with their pre- and post-scripts and the scripts those run, and the runners' settings. Every script,
 * when a gate runs the package manager in a way not read here.
 */
function scriptsRun(text: string, gates: readonly string[]): string {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return "";
  }
  const scripts = (json.scripts ?? {}) as Record<string, unknown>;
  const runners = PACKAGE_KEYS.filter((k) => k !== "scripts").map((k) => JSON.stringify(json[k] ?? null));
  const RUN = /\b(?:npm|yarn|pnpm|bun)(?:\s+--?[\w-]+)*\s+(?:run(?:-script)?\s+)?([\w:.-]+)/g;
  const wanted = new Set<string>();
  const visit = (command: string) => {
    for (const m of command.matchAll(RUN)) {
      const name = m[1] === "t" || m[1] === "tst" ? "test" : m[1]!;
      for (const script of [`pre${name}`, name, `post${name}`]) {
        if (wanted.has(script) || typeof scripts[script] !== "string") continue;
        wanted.add(script);
        visit(scripts[script]);
      }
    }
  };
  gates.forEach(visit);
  const run = wanted.size > 0 ? [...wanted] : Object.keys(scripts);
  return [...run.map((k) => String(scripts[k])), ...runners].join("\n");
}

/** The repository paths a text names, read from its directory and from the root. */
function namedIn(text: string, dir: string): Set<string> {
  const paths = new Set<string>();
  for (const token of text.match(/[\w.@/+-]*[\w/][\w.@/+-]*/g) ?? []) {
    const word = token.replace(/^\.\//, "");
    if (!word || word.length > 300) continue;
    for (const path of [posix.normalize(word.replace(/^\/+/, "")), posix.join(dir, word)])
      if (!path.startsWith("..") && path !== ".") paths.add(path.replace(/\/+$/, ""));
  }
  return paths;
}

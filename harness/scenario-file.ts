/**
 * The scenario format (docs/scenarios.md): one YAML file per scenario, or a folder holding
 * `scenario.yaml` and the repository's files under `files/`. Read with the graph loader's YAML reader
 * (positions kept) and checked with zod, so that a bad file is refused with one line naming its file,
 * line and field, as a bad graph is. The built-in suite (bench/scenarios/) is read by this same loader.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { z } from "zod";
import { formatIssue, GraphError } from "../src/graph/errors.ts";
import { loadYaml } from "../src/graph/yaml.ts";

const shell = z.string().min(1, "must be a shell command");
const id = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, "must be letters, digits, `_`, `.` or `-`");
/** Graph keys passed through to the graph file as they are (the graph's own loader checks them). */
const passThrough = z.record(z.string(), z.unknown());

const task = z.strictObject({
  id: id.optional(),
  description: z.string().min(1),
  /** What the scripted task agent runs in its checkout before it hands back (bash). */
  agent: shell,
  /** The task's completion gate (default: the scenario's `gate`); null: none. */
  gate: shell.nullable().optional(),
  depends_on: z.array(id).optional(),
  tagged_paths: z.array(z.strictObject({ path: z.string().min(1), category: z.string().min(1) })).optional(),
  /** Other task keys of the graph language, passed through. */
  graph: passThrough.optional(),
});

const workstream = z.strictObject({
  id,
  /** One task (its id is the workstream's) ... */
  description: z.string().min(1).optional(),
  agent: shell.optional(),
  gate: shell.nullable().optional(),
  tagged_paths: task.shape.tagged_paths,
  /** ... or several. */
  tasks: z.array(task).min(1).optional(),
  /** Workstream keys of the graph language (depends_on, integration_gate, ...), passed through. */
  graph: passThrough.optional(),
});

const moment = z.union([z.strictObject({ before_merge: id }), z.strictObject({ after_merge: id })]);

const hook = z.strictObject({
  /**
   * When: `before_merge: WS`, after workstream WS's integration branch passed its verification and
   * just before the target takes it; `after_merge: X`, once task X merged into its integration branch
   * (or workstream X landed on the target).
   */
  at: moment,
  /** The third party's commit to the target: files written (path: text; null deletes). */
  push: z.record(z.string().min(1), z.string().nullable()),
  message: z.string().min(1).optional(),
});

const check = z.strictObject({
  /** Run in each tree the target took, with the pristine `files` laid over it (default: `gate`). */
  command: shell.optional(),
  /** Paths of the scenario's `files` put back, as the scenario wrote them, before `command` runs. */
  files: z.array(z.string().min(1)).optional(),
  /** Where the test files are: path prefixes (default: `tests/`). */
  tests: z.array(z.string().min(1)).min(1).optional(),
  /** Runs one test file (`{file}` is its path), as its writer wrote it, on the final target. */
  test_command: shell.optional(),
  /** Test files the scenario's people removed on purpose: not counted as weakened when gone. */
  removed: z.array(z.string().min(1)).optional(),
});

const expectation = z.strictObject({
  /** How the run ends: `succeeded`, `failed`, or `waiting` (an integration PR waits for a person). */
  outcome: z.enum(["succeeded", "failed", "waiting"]).optional(),
  /** How many integration PRs wait for a person. */
  to_person: z.number().int().min(0).optional(),
  /** How many repairs were spent (over the run). */
  repairs: z.number().int().min(0).optional(),
  /** A pattern the reason of a waiting workstream matches. */
  reason: z.string().min(1).optional(),
  /** Trees the check finds broken on the target, on purpose (a break no gate of the graph sees): 0 by default. */
  broken: z.number().int().min(0).optional(),
  /** A pattern what the plan says of the graph matches (its note on workstreams no whole-tree gate verifies). */
  plan: z.string().min(1).optional(),
  /** At least this many gates found flaky over the run. */
  flaky: z.number().int().min(0).optional(),
  /** At least this many gates stopped as timed out. */
  timed_out: z.number().int().min(0).optional(),
});

const expectations = expectation.extend({
  /**
   * What the run shows instead when the order two jobs finish in decides it (GitHub's timing, not the
   * product's): the run meets `expect` when it meets either. Broken and weakened trees are judged once,
   * for both.
   */
  or: expectation.omit({ broken: true }).optional(),
});

export const scenarioSchema = z.strictObject({
  name: id,
  /** What kind of case it is, in a few words (the bench's rows and the tests' names). */
  kind: z.string().min(1),
  /** The repository before the run (committed on main); a folder's `files/` adds to it. */
  files: z.record(z.string().min(1), z.string()).optional(),
  /** Every task's completion gate unless it names its own. */
  gate: shell.default("node test.js"),
  /** Graph-wide keys passed through (integration_gate, overlaps, max_repair_attempts, ...). */
  graph: passThrough.optional(),
  workstreams: z.array(workstream).min(1),
  /** What the repair agent runs in the integration branch it repairs; null: it finds nothing to do. */
  repair: shell.nullable().default(null),
  /** What the resolution agent runs on a conflict (default: keep both sides of every conflict). */
  resolution: shell.optional(),
  check: check.default({}),
  hooks: z.array(hook).optional(),
  /** A gate (task or landing) that has not finished by then is stopped as timed out. */
  gate_timeout_seconds: z.number().positive().optional(),
  /** How many times the scenario runs (a flaky gate shows over several). */
  runs: z.number().int().min(1).max(20).default(1),
  /** Where it runs: locally, on the stand-in, or both (default). */
  where: z
    .array(z.enum(["local", "stand-in"]))
    .min(1)
    .default(["local", "stand-in"]),
  /** The stand-in's target: requires a merge queue (its `merge_group` CI runs `check.command`). */
  stand_in: z.strictObject({ merge_queue: z.boolean().optional() }).optional(),
  /** What the run must show with verification on (the tests and the bench's `unexpected`). */
  expect: expectations.optional(),
});

export type ScenarioFile = z.infer<typeof scenarioSchema>;

/** A scenario as read: every workstream with its tasks spelt out, and the files of its folder. */
export interface Scenario extends Omit<ScenarioFile, "workstreams" | "files"> {
  files: Record<string, string>;
  workstreams: {
    id: string;
    tasks: (z.infer<typeof task> & { id: string })[];
    graph?: Record<string, unknown>;
  }[];
  /** Where it was read from. */
  source: string;
}

/** A bad scenario file: one line, `FILE:LINE:COL: field: message`. */
export class ScenarioError extends Error {}

/** Reads one scenario: a YAML file, or a folder with `scenario.yaml` (and `files/`). */
export function readScenario(path: string): Scenario {
  const folder = statSync(path).isDirectory();
  const file = folder ? join(path, "scenario.yaml") : path;
  if (!existsSync(file)) throw new ScenarioError(`${path}: a scenario folder needs a scenario.yaml`);
  const text = readFileSync(file, "utf8");
  let yaml: ReturnType<typeof loadYaml>;
  try {
    yaml = loadYaml(file, text);
    void yaml.value;
  } catch (error) {
    if (error instanceof GraphError) throw new ScenarioError(formatIssue(error.issues[0]!));
    throw error;
  }
  const parsed = scenarioSchema.safeParse(yaml.value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path_ = issue.path as (string | number)[];
    const which = issue.code === "unrecognized_keys" ? "key" : "value";
    const at = issue.code === "unrecognized_keys" ? [...path_, issue.keys[0]!] : path_;
    const field = at.map((p) => (typeof p === "number" ? `[${p}]` : `.${p}`)).join("");
    const message =
      issue.code === "unrecognized_keys" ? `unknown key(s): ${issue.keys.join(", ")}` : issue.message;
    throw new ScenarioError(formatIssue(yaml.issue(at, field.replace(/^\./, ""), message, which)));
  }
  const s = parsed.data;
  const files = { ...(s.files ?? {}), ...(folder ? filesUnder(join(path, "files")) : {}) };
  const workstreams = s.workstreams.map((w, i) => {
    const at = (field: string, message: string) =>
      new ScenarioError(
        formatIssue(yaml.issue(["workstreams", i, field], `workstreams[${i}].${field}`, message)),
      );
    if (w.tasks && (w.agent || w.description))
      throw at("tasks", "give either `tasks` or one task's `description` and `agent`, not both");
    if (!w.tasks && !(w.agent && w.description))
      throw at("id", "needs `tasks`, or `description` and `agent` for its one task");
    const tasks = w.tasks
      ? w.tasks.map((t, j) => ({ ...t, id: t.id ?? (w.tasks!.length === 1 ? w.id : `${w.id}-${j + 1}`) }))
      : [
          {
            id: w.id,
            description: w.description!,
            agent: w.agent!,
            ...(w.gate !== undefined ? { gate: w.gate } : {}),
            ...(w.tagged_paths ? { tagged_paths: w.tagged_paths } : {}),
          },
        ];
    return { id: w.id, tasks, ...(w.graph ? { graph: w.graph } : {}) };
  });
  return { ...s, files, workstreams, source: path };
}

/** Every file under `dir`, by its path relative to it. */
function filesUnder(dir: string): Record<string, string> {
  if (!existsSync(dir)) return {};
  const found: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true }))
    if (entry.isFile()) {
      const full = join(entry.parentPath, entry.name);
      found[relative(dir, full)] = readFileSync(full, "utf8");
    }
  return found;
}

/** Every scenario in `dir` (its `*.yaml` files and its folders holding a scenario.yaml), by name. */
export function readScenarios(dir: string): Scenario[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw new ScenarioError(
      `${dir}: not a folder of scenarios; name a folder of *.yaml files or scenario folders`,
    );
  const scenarios = readdirSync(dir)
    .sort()
    .filter((name) =>
      statSync(join(dir, name)).isDirectory()
        ? existsSync(join(dir, name, "scenario.yaml"))
        : /\.ya?ml$/.test(name),
    )
    .map((name) => readScenario(join(dir, name)));
  if (scenarios.length === 0)
    throw new ScenarioError(`${dir}: no scenarios (*.yaml files, or folders holding a scenario.yaml)`);
  const seen = new Set<string>();
  for (const s of scenarios) {
    if (seen.has(s.name))
      throw new ScenarioError(`${s.source}: another scenario of ${dir} is named ${s.name}`);
    seen.add(s.name);
  }
  return scenarios;
}

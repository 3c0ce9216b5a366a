/**
 * The agentrelay graph dialect as zod schemas: the single source for validation, for the types of the
 * parsed file and for the published JSON Schema (`agentrelay schema`).
 *
 * Messages follow agentrelay's wording ("must be a string", "contains unknown key(s): a, b") so users
 * of the Python tool recognise them; the location and field path are added by the loader.
 */
import { MAX_USD } from "./amount.ts";
import { z } from "zod";
import { HOST_PATTERN, hostPatternProblem } from "./network.ts";

type Issue = { input?: unknown };
/** A missing key reports "is required"; any other problem reports `text`. */
const says =
  (text: string) =>
  (issue: Issue): string =>
    issue.input === undefined ? "is required" : text;

/**
 * What a value must look like for zod to hand it back unchanged: strings already trimmed, enum values
 * in their canonical spelling. The loader checks a graph against this form first (graph/canonical.ts,
 * generated from these schemas) and asks zod only when the file is not in it: most files are.
 */
export const canonicalForm = z.registry<{ pattern?: string; enum?: readonly string[] }>();
/** A string with no surrounding whitespace (and so at least one character): what `.trim().min(1)` keeps. */
export const TRIMMED_PATTERN = "^\\S(?:[\\s\\S]*\\S)?$";

const string = () => z.string({ error: says("must be a string") });
/** A non-empty string, trimmed as agentrelay trims accepted strings. */
const text = () =>
  string()
    .trim()
    .min(1, { error: "must be a non-empty string" })
    .register(canonicalForm, { pattern: TRIMMED_PATTERN });
const boolean = () => z.boolean({ error: says("must be a boolean") });
const positiveInt = () =>
  z
    .int({ error: says("must be an integer") })
    .positive({ error: "must be greater than 0" })
    .max(MAX_USD, { error: `must be at most ${MAX_USD}` });

/** A count that may be zero (an operational key of ours). */
const count = () =>
  z
    .int({ error: says("must be an integer") })
    .min(0, { error: "must be 0 or more" })
    .max(100, { error: "must be at most 100" });

/**
 * The most tasks a graph may have: twice the largest run the benchmarks measure (10,000 tasks), so that
 * a pushed graph is planned, started and answered well within GitHub's 10 s and in bounded memory,
 * whatever the file holds (docs/benchmarks.md).
 */
export const MAX_TASKS = 20_000;

/** An amount of US dollars a budget allows (an operational key of ours). */
const usd = () =>
  z
    .number({ error: says("must be a number of US dollars") })
    .positive({ error: "must be greater than 0" })
    .max(MAX_USD, { error: `must be at most ${MAX_USD}` });

/**
 * An enum accepted by value or by (Python) enum name, case-insensitively, as agentrelay does; the
 * result is the canonical value. The JSON Schema lists the value and upper-case name spellings.
 */
function choice<const T extends string>(kind: string, values: readonly T[]): z.ZodType<T, string> {
  const allowed = values.join(", ");
  const known = new Set<string>(values);
  const canonical = (raw: string) => {
    if (known.has(raw)) return raw;
    const wanted = raw.trim().toLowerCase();
    return known.has(wanted) ? wanted : raw;
  };
  return string()
    .overwrite(canonical)
    .refine((value) => known.has(value), {
      error: (issue) => `invalid ${kind} '${String(issue.input)}'. Allowed: ${allowed}`,
    })
    .meta({ enum: [...values, ...values.map((v) => v.toUpperCase())] })
    .register(canonicalForm, { enum: values }) as unknown as z.ZodType<T, string>; // the refinement leaves only a T
}

export const ROLES = ["spec_writer", "test_writer", "test_reviewer", "implementer", "generic"] as const;
export const SANDBOXES = ["none", "oci"] as const;
export const TOKEN_TIERS = ["read_only", "standard", "elevated"] as const;
export const RUNTIMES = ["docker", "podman"] as const;
export const ADR_VERBOSITIES = ["none", "standard", "detailed", "educational"] as const;
export const TEARDOWN_MODES = ["always", "never", "on_success"] as const;
export const OVERLAP_POLICIES = ["warn", "serialize"] as const;

export type Role = (typeof ROLES)[number];
export type TokenTier = (typeof TOKEN_TIERS)[number];
export type AdrVerbosity = (typeof ADR_VERBOSITIES)[number];

export const isolationSchema = z
  .strictObject({
    sandbox: choice("sandbox", SANDBOXES).nullish(),
    token_tier: choice("token_tier", TOKEN_TIERS).nullish(),
    image: text().nullish(),
    runtime: choice("runtime", RUNTIMES).nullish(),
  })
  .meta({ description: "Isolation settings; inherited per field graph -> workstream -> task -> agent." });

export const networkSchema = z
  .strictObject({
    allow: z
      .array(
        text()
          .refine((host) => hostPatternProblem(host) === null, {
            error: (issue) => hostPatternProblem(String(issue.input)) ?? "invalid host",
          })
          .register(canonicalForm, { pattern: HOST_PATTERN }),
        { error: "must be a list of host names" },
      )
      .nullish(),
  })
  .meta({
    description:
      "Hosts the attempt's processes may reach besides the model API (`host`, `*.domain`, either with `:port`; `*`: anything). Inherited graph -> workstream -> task.",
  });

export const agentSchema = z.strictObject({
  framework: choice("framework", ["claude_code"] as const).nullish(),
  model: text().nullish(),
  adr_verbosity: choice("adr_verbosity", ADR_VERBOSITIES).nullish(),
  environment: z
    .strictObject({
      type: choice("environment type", ["tmux"] as const).nullish(),
      session: text().nullish(),
    })
    .nullish()
    .meta({ description: "Accepted for compatibility with agentrelay's tmux runner; unused here." }),
  isolation: isolationSchema.nullish(),
});

const inputRefSchema = z.strictObject({ task: text(), category: text().nullish() });

const taggedPathSchema = z.strictObject({ path: text(), category: text() });

export const taskSchema = z.strictObject({
  id: text(),
  role: choice("role", ROLES).nullish(),
  description: z.string({ error: says("must be a string or null") }).nullish(),
  dependencies: z.array(text(), { error: says("must be a list of task IDs") }).optional(),
  paths: z
    .strictObject({
      src: z.array(text(), { error: "must be a list of strings" }).nullish(),
      test: z.array(text(), { error: "must be a list of strings" }).nullish(),
      spec: text().nullish(),
    })
    .nullish()
    .meta({ description: "Legacy sugar for tagged_paths (categories src, test, spec)." }),
  tagged_paths: z
    .array(taggedPathSchema, { error: says("must be a list of {path, category} mappings") })
    .nullish(),
  completion_gate: text().nullish().meta({ description: "Shell command run in the job; exit 0 passes." }),
  max_gate_attempts: positiveInt().nullish(),
  primary_agent: agentSchema.nullish(),
  review: z
    .strictObject({
      agent: agentSchema.nullable(),
      review_on_attempt: positiveInt().optional(),
    })
    .nullish(),
  workstream_id: text().nullish(),
  isolation: isolationSchema.nullish(),
  network: networkSchema.nullish(),
  inputs_from: z
    .union([inputRefSchema, z.array(inputRefSchema)], { error: "must be a mapping or list of mappings" })
    .nullish(),
  max_cost_usd: usd().nullish().meta({ description: "What the task's attempts may spend together." }),
  max_attempt_cost_usd: usd().nullish().meta({ description: "What one attempt of the task may spend." }),
  max_resolution_attempts: count().nullish().meta({
    description: "Agent attempts to resolve the task PR's conflicts with the integration branch (0: none).",
  }),
});

export const workstreamSchema = z.strictObject({
  id: text(),
  parent_workstream_id: text().nullish(),
  base_branch: text().optional(),
  merge_target_branch: text().optional(),
  auto_merge: boolean().optional(),
  isolation: isolationSchema.nullish(),
  network: networkSchema.nullish(),
  max_cost_usd: usd().nullish().meta({ description: "What the workstream's tasks may spend together." }),
  max_resolution_attempts: count().nullish().meta({
    description: "Agent attempts to resolve the integration PR's conflicts (0: leave them to a person).",
  }),
  integration_gate: text().nullish().meta({
    description:
      "Shell command the integration branch must pass, as it will land (default: its tasks' completion gates).",
  }),
  verify_integration: boolean().nullish().meta({
    description:
      "Run the gates on the tree that will land before the integration PR merges (default: the graph's, true).",
  }),
  max_repair_attempts: count().nullish().meta({
    description:
      "Agent attempts to fix an integration branch that fails its gates as it will land (0: none).",
  }),
  repository: text().nullish().meta({
    description:
      "The repository the workstream lives in: a name declared under `repositories` (default: the graph's own).",
  }),
});

export const graphFileSchema = z
  .strictObject({
    name: text(),
    tasks: z
      .array(taskSchema, { error: says("must be a list") })
      .min(1, { error: "must contain at least one task" })
      .max(MAX_TASKS, {
        error: (issue) =>
          `must contain at most ${MAX_TASKS.toLocaleString("en-US")} tasks (this one has ${(issue.input as unknown[]).length.toLocaleString("en-US")}): split it into graphs that depend on each other's merges`,
      }),
    workstreams: z
      .array(workstreamSchema, { error: "must be a list" })
      .min(1, { error: "must contain at least one workstream" })
      .nullish(),
    max_workstream_depth: positiveInt().nullish(),
    repositories: z
      .record(string(), text(), { error: "must be a mapping of names to OWNER/NAME repositories" })
      .nullish()
      .meta({
        description:
          "The other repositories the graph's workstreams live in, by short name: `api: octo/api` (a workstream says `repository: api`).",
      }),
    isolation: isolationSchema.nullish(),
    network: networkSchema.nullish(),
    output_review: z
      .union([boolean(), z.strictObject({ model: text().nullish() })], {
        error: "must be true, false or a mapping with a model",
      })
      .nullish()
      .meta({
        description:
          "Before a push, a small model asks whether the diff does something other than the task asked (true, or { model }).",
      }),
    // Operational keys (agentrelay reads them outside its schema; they are part of the file all the same).
    model: text().nullish().meta({ description: "Default model for tasks that do not name one." }),
    tools: z.array(text(), { error: "must be a list of strings" }).nullish(),
    anthropic_credential: text().nullish(),
    keep_panes: boolean().nullish(),
    max_concurrency: positiveInt().nullish(),
    max_task_attempts: positiveInt().nullish(),
    teardown_mode: choice("teardown_mode", TEARDOWN_MODES).nullish(),
    fail_fast_on_workstream_error: boolean().nullish(),
    fail_fast_on_internal_error: boolean().nullish(),
    max_cost_usd: usd().nullish().meta({ description: "What the whole run may spend." }),
    max_resolution_attempts: count()
      .nullish()
      .meta({ description: "Agent attempts to resolve a PR's conflicts (default 2; 0: none)." }),
    max_attempt_cost_usd: usd()
      .nullish()
      .meta({ description: "What one attempt may spend (a task may say less)." }),
    verify_integration: boolean().nullish().meta({
      description:
        "Run the gates on the tree that will land before an integration PR merges, and repair it when they fail (default true).",
    }),
    max_repair_attempts: count().nullish().meta({
      description:
        "Agent attempts to fix an integration branch that fails its gates as it will land (default 2; 0: none).",
    }),
    integration_gate: text().nullish().meta({
      description:
        "Shell command every integration branch must also pass as it will land, beside its workstream's own gates: the whole-tree check (an end-to-end suite, say).",
    }),
    test_paths: z.array(text(), { error: "must be a list of paths" }).nullish().meta({
      description:
        "Where the tests are (files or directories): what a repair or resolution may not weaken (default: the usual names, test/, *.test.*, test_*.py, ...).",
    }),
    protect_tests: boolean().nullish().meta({
      description:
        "Hold task agents to what repairs are held to: a task that edits or deletes a test it did not write, or a gate's script or the test runner's configuration, is not pushed.",
    }),
    max_verifications: positiveInt().nullish().meta({
      description:
        "Times an integration branch is verified before it merges, when its target keeps moving (default 3).",
    }),
    overlaps: choice("overlaps", OVERLAP_POLICIES).nullish().meta({
      description:
        "Tasks of different workstreams that may run at once and name the same paths: warn (default), or serialize (the later waits for the earlier one's workstream to land).",
    }),
    min_attempt_cost_usd: usd().nullish().meta({
      description:
        "The least an attempt starts with (default: four turns of its model, $0.30 for Sonnet); a budget with less left waits for a raise.",
    }),
  })
  .meta({
    title: "agentrelay task graph",
    description: "A graph of coding-agent tasks grouped into workstreams (agentrelay dialect).",
  });

export type GraphFile = z.output<typeof graphFileSchema>;
export type TaskFile = z.output<typeof taskSchema>;
export type AgentFile = z.output<typeof agentSchema>;
export type IsolationFile = z.output<typeof isolationSchema>;
export type NetworkFile = z.output<typeof networkSchema>;

/**
 * The JSON Schema of graph files zod would return unchanged (see `canonicalForm`): the output schema
 * with canonical strings and enums, and nullable fields as `type: [X, "null"]` (the same constraint as
 * zod's `anyOf`, which validators check several times faster).
 */
export function canonicalGraphJsonSchema(): object {
  const schema = z.toJSONSchema(graphFileSchema, {
    io: "output",
    unrepresentable: "any",
    // Schemas used in several places (agents, isolation) become one definition: one function to compile.
    reused: "ref",
    override: (ctx) => {
      const form = canonicalForm.get(ctx.zodSchema);
      if (!form) return;
      const json = ctx.jsonSchema as Record<string, unknown>;
      if (form.pattern) {
        json.pattern = form.pattern;
        delete json.minLength; // implied by the pattern
      }
      if (form.enum) json.enum = [...form.enum];
    },
  });
  return nullableAsType(schema) as object;
}

/** `anyOf: [{type: X, ...}, {type: "null"}]` -> `{type: [X, "null"], ...}`, everywhere in a schema. */
function nullableAsType(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(nullableAsType);
  if (node === null || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) out[key] = nullableAsType(value);
  const options = out.anyOf as Record<string, unknown>[] | undefined;
  const [value, none] = options ?? [];
  const plainNull = none?.type === "null" && Object.keys(none).length === 1;
  if (options?.length === 2 && plainNull && typeof value?.type === "string" && value.type !== "null") {
    delete out.anyOf;
    Object.assign(out, value, { type: [value.type, "null"] });
  }
  return out;
}

/** The JSON Schema editors use to validate graph files. */
export function graphJsonSchema(): object {
  return {
    ...z.toJSONSchema(graphFileSchema, { io: "input", unrepresentable: "any" }),
    $id: "https://github.com/agentrelay/agentrelay/schema/agentrelay-graph.schema.json",
  };
}

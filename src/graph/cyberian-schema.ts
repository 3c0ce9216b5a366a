/**
 * The cyberian workflow dialect as zod schemas. cyberian silently drops unknown keys in most of its
 * models (so a misspelt `max_iterations` vanishes); here every level rejects them. `loop_until` gains
 * an optional `max_iterations` cap, which cyberian files could not express.
 *
 * Numbers and booleans are read as cyberian's pydantic models read them, in pydantic's lax mode: an
 * integer may be written `"3"` or `3.0`, a boolean `"yes"`, `"off"` or `1`
 * (https://docs.pydantic.dev/latest/concepts/conversion_table/). Text stays text: pydantic does not
 * make `3` a string, and neither does this.
 */
import { z } from "zod";

type Issue = { input?: unknown };
const says =
  (text: string) =>
  (issue: Issue): string =>
    issue.input === undefined ? "is required" : text;
const string = () => z.string({ error: says("must be a string") });
const text = () => string().trim().min(1, { error: "must be a non-empty string" });

/** pydantic's lax int: an integer, a float with no fraction, a bool, or a string of one. */
function laxInteger(value: unknown): unknown {
  if (typeof value === "boolean") return value ? 1 : 0;
  const digits = typeof value === "string" ? /^\s*([+-]?\d+)(?:\.0*)?\s*$/.exec(value) : null;
  return digits ? Number(digits[1]) : value;
}
const LAX_BOOLEANS = new Map([
  ...["0", "off", "f", "false", "n", "no"].map((word) => [word, false] as const),
  ...["1", "on", "t", "true", "y", "yes"].map((word) => [word, true] as const),
]);
/** pydantic's lax bool: a bool, 0 or 1, or one of its words in any case. */
function laxBoolean(value: unknown): unknown {
  if (value === 0 || value === 1) return value === 1;
  return typeof value === "string" ? (LAX_BOOLEANS.get(value.trim().toLowerCase()) ?? value) : value;
}
const integer = () => z.int({ error: "must be an integer" });
const laxInt = () => z.preprocess(laxInteger, integer());
const laxBool = () => z.preprocess(laxBoolean, z.boolean({ error: "must be a boolean" }));

export const paramSchema = z.strictObject({
  range: text(),
  required: laxBool().optional(),
  examples: z.array(z.unknown(), { error: "must be a list" }).optional(),
  description: string().optional(),
});

const loopUntilSchema = z.strictObject({
  status: text(),
  message: string(),
  max_iterations: z
    .preprocess(laxInteger, integer().positive({ error: "must be greater than 0" }).max(1000))
    .optional(),
});

const successCriteriaSchema = z.strictObject({
  python: string().nullish(),
  script: text().nullish(),
  max_retries: laxInt().optional(),
  retry_message: string().nullish(),
});

const providerCallSchema = z.strictObject({
  provider: text(),
  method: text(),
  params: z.record(z.string(), z.unknown(), { error: "must be a mapping" }).optional(),
  output_file: string().nullish(),
});

const preconditionsSchema = z.strictObject({
  files_exist: z
    .strictObject({
      patterns: z.array(text(), { error: says("must be a list of strings") }),
      min_count: laxInt().nullish(),
    })
    .nullish(),
  sync_targets: z.strictObject({ paths: z.array(text()), description: string().nullish() }).nullish(),
});

const level = z.enum(["REQUIRED", "RECOMMENDED", "OPTIONAL"], {
  error: "must be REQUIRED, RECOMMENDED or OPTIONAL",
});
const requirementsSchema = z.strictObject({
  agents: z
    .array(
      z.strictObject({
        name: text(),
        level: level.optional(),
        reason: string().nullish(),
        version: string().nullish(),
      }),
    )
    .nullish(),
  dependencies: z
    .array(
      z.strictObject({
        name: text(),
        version: string().nullish(),
        level: level.optional(),
        reason: string().nullish(),
      }),
    )
    .nullish(),
  notes: string().nullish(),
});

export interface CyberianTaskFile {
  name?: string | null | undefined;
  description?: string | null | undefined;
  requires_workdir?: boolean | undefined;
  requirements?: z.output<typeof requirementsSchema> | null | undefined;
  preconditions?: z.output<typeof preconditionsSchema> | null | undefined;
  params?: Record<string, z.output<typeof paramSchema>> | undefined;
  instructions?: string | null | undefined;
  system_instructions?: string | null | undefined;
  provider_call?: z.output<typeof providerCallSchema> | null | undefined;
  subtasks?: Record<string, CyberianTaskFile> | undefined;
  loop_until?: z.output<typeof loopUntilSchema> | null | undefined;
  success_criteria?: z.output<typeof successCriteriaSchema> | null | undefined;
  agent_lifecycle?: string | null | undefined;
}

export const cyberianTaskSchema: z.ZodType<CyberianTaskFile> = z.strictObject({
  name: string().nullish(),
  description: string().nullish(),
  requires_workdir: laxBool().optional(),
  requirements: requirementsSchema.nullish(),
  preconditions: preconditionsSchema.nullish(),
  params: z.record(z.string(), paramSchema, { error: "must be a mapping" }).optional(),
  instructions: string().nullish(),
  system_instructions: string().nullish(),
  provider_call: providerCallSchema.nullish(),
  get subtasks() {
    return z
      .record(z.string(), cyberianTaskSchema, { error: "must be a mapping of subtask name to task" })
      .optional();
  },
  loop_until: loopUntilSchema.nullish(),
  success_criteria: successCriteriaSchema.nullish(),
  agent_lifecycle: string().nullish(),
});

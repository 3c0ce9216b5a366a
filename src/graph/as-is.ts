/**
 * zod's accept path without its allocations, for the usual case where parsing would change nothing.
 *
 * zod builds a new output tree of objects and arrays, and a payload object for every field it checks,
 * present or not: for a 10,000-task graph that is about 10 MB of short-lived objects, and the
 * collections they trigger copy the whole freshly parsed YAML tree. Yet most graph files already are
 * what zod would output: plain YAML scalars carry no surrounding spaces, and enum values are written in
 * their canonical spelling.
 *
 * `acceptsAsIs(schema)` answers, building nothing, whether zod would accept a value and return the same
 * tree. Objects, arrays, optional, nullable and unions are walked here, mirroring zod's rules for them.
 * Every other schema (strings with their trims and refinements, numbers, enums...) is zod's own code:
 * its type test and its checks, in zod's order, on one reused payload, which must come back holding the
 * very same value. Anything this does not model answers false: the caller then parses with zod as
 * usual, which also writes the error messages. So zod stays the only definition of what is valid and
 * of what it becomes.
 */
import { z } from "zod";

type Schema = z.core.$ZodType;
type Accepts = (value: unknown) => boolean;
type Payload = z.core.ParsePayload;
type Check = z.core.$ZodCheck<unknown>;

/** What this module reads of zod's schema definitions (`zod/v4/core`'s public `_zod.def`). */
interface Def {
  type: string;
  checks?: Check[];
  shape?: Record<string, Schema>;
  element?: Schema;
  innerType?: Schema;
  options?: Schema[];
  inclusive?: boolean;
}

const SYNC = { async: false } as const;
const known = new WeakMap<Schema, Accepts>();
const building = new Set<Schema>();

export function acceptsAsIs(schema: Schema): Accepts {
  const cached = known.get(schema);
  if (cached) return cached;
  // A schema that contains itself (through a getter) refers back to its entry once built.
  if (building.has(schema)) return (value) => known.get(schema)!(value);
  building.add(schema);
  try {
    const walk = structure(schema);
    const accepts = walk ? withChecks(schema, walk) : leafAsIs(schema);
    known.set(schema, accepts);
    return accepts;
  } finally {
    building.delete(schema);
  }
}

/** zod's `safeParse`, skipped when the value already is its own output. */
export function safeParseAsIs<S extends Schema>(
  schema: S,
  value: unknown,
  params?: z.core.ParseContext<z.core.$ZodIssue>,
): z.ZodSafeParseResult<z.output<S>> {
  if (acceptsAsIs(schema)(value)) return { success: true, data: value as z.output<S> };
  return z.safeParse(schema, value, params);
}

/** How zod treats a container, or null for a schema parsed by zod itself. */
function structure(schema: Schema): Accepts | null {
  const def = schema._zod.def as Def;
  switch (def.type) {
    case "object":
      return objectAsIs(def.shape!);
    case "array": {
      const element = acceptsAsIs(def.element!);
      return (value) => Array.isArray(value) && value.every(element);
    }
    case "optional": {
      const inner = def.innerType!;
      // An inner schema that makes something of undefined (a default) has to be run by zod.
      if (inner._zod.optin === undefined) {
        const innerDef = inner._zod.def as Def;
        // `.nullish()`, optional(nullable(x)), is most optional fields: one test instead of two calls.
        if (innerDef.type === "nullable" && !innerDef.checks?.length) {
          const accepts = acceptsAsIs(innerDef.innerType!);
          return (value) => value == null || accepts(value);
        }
        const accepts = acceptsAsIs(inner);
        return (value) => value === undefined || accepts(value);
      }
      break;
    }
    case "nullable": {
      const inner = acceptsAsIs(def.innerType!);
      return (value) => value === null || inner(value);
    }
    case "union":
      if (def.inclusive !== false) return unionAsIs(def.options!);
      break;
  }
  return null;
}

/**
 * As zod: a mapping whose every key is in the shape and accepted, and which has every key that may not
 * be left out. Driven by the value's own keys, which are few, rather than by the shape's.
 */
function objectAsIs(shape: Record<string, Schema>): Accepts {
  const fields = new Map(
    Object.entries(shape).map(([key, field]) => [
      key,
      {
        accepts: acceptsAsIs(field),
        required: !(field._zod.optin === "optional" && field._zod.optout === "optional"),
      },
    ]),
  );
  const required = [...fields.values()].filter((f) => f.required).length;
  return (value) => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
    const record = value as Record<string, unknown>;
    let requiredSeen = 0;
    for (const key in record) {
      // zod rejects (strict), drops (strip) or re-parses (catchall) any other key: none is as-is.
      const field = key === "__proto__" ? undefined : fields.get(key);
      if (field === undefined || !field.accepts(record[key])) return false;
      if (field.required) requiredSeen++;
    }
    return requiredSeen === required;
  };
}

/** As zod: the first option that accepts decides; if that one would change the value, nothing is as-is. */
function unionAsIs(options: Schema[]): Accepts {
  const asIs = options.map(acceptsAsIs);
  return (value) => {
    for (let i = 0; i < options.length; i++) {
      if (asIs[i]!(value)) return true;
      if (z.safeParse(options[i]!, value).success) return false;
    }
    return false;
  };
}

/**
 * zod's parse of the value's type, then the schema's checks, as zod's own `run` does them (a schema such
 * as `z.int()` or `z.email()` is itself its first check). Not `run` itself: it allocates a closure
 * context per call.
 */
function leafAsIs(schema: Schema): Accepts {
  const internals = schema._zod;
  const def = internals.def as Def & { coerce?: boolean };
  const own = def.checks ?? [];
  const checks = internals.traits.has("$ZodCheck") ? [schema as unknown as Check, ...own] : own;
  const payload = newPayload();
  if (def.type === "string" && !def.coerce) {
    // Most leaves are strings, and zod's type test for them is exactly this; the call through each
    // schema's own `parse` closure was a third of the walk. A closure of its own: one shared with the
    // general case below, branching on the type, measured as slow as calling `parse`.
    return (value) => {
      if (typeof value !== "string") return false;
      payload.value = value;
      return settle(payload, passes(checks, payload) && payload.value === value);
    };
  }
  return (value) => {
    payload.value = value;
    const parsed = internals.parse(payload, SYNC);
    return settle(
      payload,
      parsed === payload && payload.issues.length === 0 && passes(checks, payload) && payload.value === value,
    );
  };
}

/** A container's own checks (an array's `.min(1)`), which zod runs after its contents. */
function withChecks(schema: Schema, contents: Accepts): Accepts {
  const checks = (schema._zod.def as Def).checks;
  if (!checks?.length) return contents;
  const payload = newPayload();
  return (value) => {
    if (!contents(value)) return false;
    payload.value = value;
    return settle(payload, passes(checks, payload) && payload.value === value);
  };
}

/** Runs checks in order as zod does, skipping those whose `when` declines; false at the first issue. */
function passes(checks: readonly Check[], payload: Payload): boolean {
  for (const check of checks) {
    const when = check._zod.def.when;
    if (when && !when(payload)) continue;
    if (check._zod.check(payload) instanceof Promise || payload.issues.length > 0) return false;
  }
  return true;
}

function newPayload(): Payload {
  return { value: undefined, issues: [], aborted: false };
}

/** Clears a reused payload (keeping no reference to the value) and returns `verdict`. */
function settle(payload: Payload, verdict: boolean): boolean {
  payload.value = undefined;
  if (payload.issues.length > 0 || payload.aborted) {
    payload.issues = [];
    payload.aborted = false;
  }
  return verdict;
}

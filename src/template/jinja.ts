/**
 * Jinja-compatible templating, on MiniJinja (Armin Ronacher's Rust port of Jinja2, compiled to
 * WebAssembly). It renders Python-flavoured templates (`.strip()`, `//`, `~`, `loop.index`, `True`)
 * that JavaScript engines get wrong. Unlike cyberian, an undefined variable is an error, never empty
 * text. Templates are untrusted, so every use is bounded: work (MiniJinja's fuel), memory (see
 * wasm-limits.ts) and output; and each runs in a fresh environment, so that one that traps cannot
 * leave the engine broken for the next.
 */
import { TEMPLATE_MEMORY_MB } from "./wasm-limits.ts";
import minijinja from "minijinja-js";

export const TEMPLATE_LIMITS = {
  /** MiniJinja's fuel: the instructions one template may execute. */
  fuel: 5_000_000,
  memoryMb: TEMPLATE_MEMORY_MB,
  /** Characters one rendering may produce. */
  outputChars: 1_000_000,
} as const;

type Environment = InstanceType<typeof minijinja.Environment>;

export class TemplateError extends Error {
  override name = "TemplateError";
}

/** MiniJinja's reason, in one line, with the template line it names (`... (in <string>:3)`). */
function reason(error: unknown): string {
  // A WebAssembly trap: an allocation past the memory cap.
  if ((error as Error)?.name === "RuntimeError")
    return `the template needs more than ${TEMPLATE_LIMITS.memoryMb} MB of memory (the limit)`;
  const text = String((error as Error)?.message ?? error);
  if (/out of fuel/i.test(text))
    return `the template takes more than ${TEMPLATE_LIMITS.fuel} steps to render (the limit)`;
  const [first = ""] = text.split("\n");
  const line = / \(in [^)]*:(\d+)\)$/.exec(first)?.[1];
  const message = first.replace(/ \(in [^)]*\)$/, "");
  return line && line !== "1" ? `${message} (template line ${line})` : message;
}

export interface RenderOptions {
  /** An undefined variable renders as empty text (Jinja2's default) instead of failing. */
  lenient?: boolean;
  /** Filters the template may call, implemented in JavaScript. */
  filters?: Record<string, (value: unknown) => unknown>;
}

function withEnvironment<T>(use: (env: Environment) => T, options: RenderOptions = {}): T {
  const env = new minijinja.Environment();
  try {
    env.undefinedBehavior = options.lenient ? "lenient" : "strict";
    for (const [name, filter] of Object.entries(options.filters ?? {})) env.addFilter(name, filter);
    env.enablePyCompat();
    // Jinja2's default: one trailing newline is dropped.
    env.keepTrailingNewline = false;
    env.fuel = TEMPLATE_LIMITS.fuel;
    return use(env);
  } catch (error) {
    throw new TemplateError(reason(error));
  } finally {
    try {
      env.free();
    } catch {
      // An environment a trap left broken is dropped all the same.
    }
  }
}

/** Returns a syntax problem in `source`, or null when it compiles. */
export function templateSyntaxError(source: string): string | null {
  try {
    withEnvironment((env) => env.addTemplate("check", source));
    return null;
  } catch (error) {
    return (error as TemplateError).message;
  }
}

export function renderTemplate(
  source: string,
  context: Record<string, unknown>,
  options: RenderOptions = {},
): string {
  const output = withEnvironment((env) => env.renderStr(source, context), options);
  if (output.length > TEMPLATE_LIMITS.outputChars)
    throw new TemplateError(
      `the template renders more than ${TEMPLATE_LIMITS.outputChars} characters (the limit)`,
    );
  return output;
}

/** Evaluates one expression to a typed value (numbers stay numbers). */
export function evaluateExpression(expression: string, context: Record<string, unknown>): unknown {
  return withEnvironment((env) => env.evalExpr(expression, context));
}

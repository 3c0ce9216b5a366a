/**
 * Jinja-compatible templating for cyberian workflows, on MiniJinja (Armin Ronacher's Rust port of
 * Jinja2, compiled to WebAssembly). It renders Python-flavoured templates (`.strip()`, `//`, `~`,
 * `loop.index`, `True`) that JavaScript engines get wrong. Unlike cyberian, an undefined variable is
 * an error, never empty text, and evaluation is bounded ("fuel") so a template cannot loop forever.
 */
import minijinja from "minijinja-js";

const FUEL = 5_000_000;

function environment(): InstanceType<typeof minijinja.Environment> {
  const env = new minijinja.Environment();
  env.undefinedBehavior = "strict";
  env.enablePyCompat();
  // Jinja2's default: one trailing newline is dropped.
  env.keepTrailingNewline = false;
  env.fuel = FUEL;
  return env;
}

let shared: InstanceType<typeof minijinja.Environment> | undefined;
const env = () => {
  shared ??= environment();
  return shared;
};

export class TemplateError extends Error {
  override name = "TemplateError";
}

/** MiniJinja appends a source excerpt after the first line; the first line says it all. */
function firstLine(error: unknown): string {
  return String((error as Error)?.message ?? error)
    .split("\n")[0]!
    .replace(/ \(in [^)]*\)$/, "");
}

/** Returns a syntax problem in `source`, or null when it compiles. */
export function templateSyntaxError(source: string): string | null {
  try {
    env().addTemplate("check", source);
    env().removeTemplate("check");
    return null;
  } catch (error) {
    return firstLine(error);
  }
}

export function renderTemplate(source: string, context: Record<string, unknown>): string {
  try {
    return env().renderStr(source, context);
  } catch (error) {
    throw new TemplateError(firstLine(error));
  }
}

/** Evaluates one expression to a typed value (numbers stay numbers). */
export function evaluateExpression(expression: string, context: Record<string, unknown>): unknown {
  try {
    return env().evalExpr(expression, context);
  } catch (error) {
    throw new TemplateError(firstLine(error));
  }
}

/**
 * Prompt assembly for steps compiled from cyberian workflows, in cyberian's order: system
 * instructions, the retry message (on retries), the instructions, the loop message (loops only), and
 * a completion paragraph. Templates render with the run's params; an undefined variable is an error.
 */
import type { CyberianStep, Graph } from "../graph/model.ts";
import type { Params } from "../graph/params.ts";
import { templateValues } from "../graph/params.ts";
import { renderTemplate, TemplateError } from "../template/jinja.ts";
import { pythonTemplate, undefinedName } from "../template/python.ts";

export const COMPLETION_PREFIX = "COMPLETION_STATUS:";

export class ParamsError extends Error {
  override name = "ParamsError";
}

/** Checks that every required param has a value; names each missing one. */
export function missingParams(graph: Graph, params: Record<string, unknown>): string[] {
  return (graph.cyberian?.params ?? [])
    .filter((p) => p.required && params[p.name] === undefined)
    .map((p) => p.name);
}

/**
 * A cyberian template rendered as cyberian renders it (Jinja over Python values: `True`, `None`,
 * `1.0`), except that a variable without a value is an error naming it, not empty text.
 */
export function renderCyberian(source: string, params: Params, field: string): string {
  const { values, floats } = templateValues(params);
  try {
    return renderTemplate(pythonTemplate(source, floats), values);
  } catch (error) {
    if (!(error instanceof TemplateError)) throw error;
    // The engine names no variable, and its line is the printing macro's: the template is searched.
    const found = /undefined value/.test(error.message) ? undefinedName(source, values) : null;
    if (!found) throw new ParamsError(`${field}: ${error.message}`);
    const line = found.line > 1 ? ` (template line ${found.line})` : "";
    throw new ParamsError(
      `${field}: undefined variable '${found.name}'${line}; give it a value (--param ${found.name}=VALUE or the params file)`,
    );
  }
}

const render = renderCyberian;

export interface CyberianPromptOptions {
  params: Record<string, unknown>;
  /** Failure text from the previous success-criteria run, for `retry_message`. */
  retryError?: string;
}

export function completionParagraph(step: CyberianStep): string {
  const lines = [
    `When you have finished, end your final answer with a line that says exactly \`${COMPLETION_PREFIX} COMPLETE\`.`,
    `If you cannot finish, end it with a line that says exactly \`${COMPLETION_PREFIX} ERROR\` and explain why above it.`,
  ];
  if (step.loopUntil) {
    lines.push(
      `This task repeats. When the condition above is met, end your final answer with a line that says exactly \`${COMPLETION_PREFIX} ${step.loopUntil.status}\` instead.`,
    );
  }
  return lines.join("\n");
}

export function cyberianPrompt(step: CyberianStep, options: CyberianPromptOptions): string {
  const { params } = options;
  const parts: string[] = [];
  if (step.systemInstructions) parts.push(render(step.systemInstructions, params, "system_instructions"), "");
  if (options.retryError !== undefined && step.successCriteria?.retryMessage) {
    parts.push(
      render(
        step.successCriteria.retryMessage,
        { ...params, error: options.retryError },
        "success_criteria.retry_message",
      ),
      "",
    );
  }
  if (step.instructions) parts.push(render(step.instructions, params, "instructions"));
  if (step.loopUntil) parts.push("", step.loopUntil.message);
  parts.push("", completionParagraph(step));
  return parts.join("\n");
}

/**
 * Reads the completion status from the agent's final answer: the last line of the form
 * `COMPLETION_STATUS: X` (or a line that is exactly one of `expected`). Mentions of the word inside
 * a sentence do not count, unlike cyberian's anywhere-in-the-text match.
 */
export function completionStatus(answer: string, expected: readonly string[] = []): string | null {
  const lines = answer.split(/\r?\n/).map((l) => l.trim().replace(/^[*_`]+|[*_`]+$/g, ""));
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    if (line === "") continue;
    const match = /^COMPLETION_STATUS:\s*([A-Za-z0-9_-]+)\s*$/.exec(line);
    if (match) return match[1]!.toUpperCase();
    if (expected.some((s) => s.toUpperCase() === line.toUpperCase())) return line.toUpperCase();
    return null;
  }
  return null;
}

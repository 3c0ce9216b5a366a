/**
 * cyberian's `success_criteria`, run in the job with the params passed as data, never pasted into code.
 *
 * cyberian renders the criteria code with Jinja before running it, so its `{% if %}` blocks, filters
 * and expressions (`{{ n // 2 }}`, `{{ items.split(',') | length }}`) shape the code, and an undefined
 * variable renders as nothing. So it is here, with one difference: a value that is text (or holds
 * text) is never pasted. Rendering prints numbers, booleans and None as Python literals (they cannot
 * change what the code does) and every other value as a marker; the rendered code then refers to the
 * marked value as data: `__agentrelay_values[0]`, or, inside a string literal, the literal split
 * around it (`('' + str(__agentrelay_values[1]) + '/SUMMARY_1.md')`). The values travel as JSON on
 * stdin, so a param such as `'); import os; os.system('x'); ('` stays a string.
 */
import { existsSync, readFileSync } from "node:fs";
import { templateValues } from "../graph/params.ts";
import { renderTemplate, TemplateError } from "../template/jinja.ts";
import { pythonTemplate } from "../template/python.ts";
import { replaceBlocks } from "../template/blocks.ts";
import { type Confinement, runBounded } from "./bounded.ts";
import { insideRepository, OutsideRepositoryError } from "./paths.ts";

const VALUES = "__agentrelay_values";
const MARKER = /__agentrelay_value_(\d+)__/g;

interface Literal {
  start: number;
  end: number;
  prefix: string;
  quote: string;
}

/** String literals and comments in Python source (prefixes, single and triple quotes). */
function stringLiterals(code: string): Literal[] {
  const literals: Literal[] = [];
  let i = 0;
  while (i < code.length) {
    const c = code[i]!;
    if (c === "#") {
      // A comment is kept as it is (an empty quote marks it).
      const start = i;
      while (i < code.length && code[i] !== "\n") i++;
      literals.push({ start, end: i, prefix: "", quote: "" });
      continue;
    }
    const prefix = /^[rRbBuUfF]{0,2}(?=['"])/.exec(code.slice(i, i + 3))?.[0];
    if (prefix !== undefined && /['"]/.test(code[i + prefix.length] ?? "") && !/\w/.test(code[i - 1] ?? "")) {
      const q = code[i + prefix.length]!;
      const quote = code.startsWith(q.repeat(3), i + prefix.length) ? q.repeat(3) : q;
      let j = i + prefix.length + quote.length;
      while (j < code.length && !code.startsWith(quote, j)) j += code[j] === "\\" ? 2 : 1;
      literals.push({ start: i, end: j + quote.length, prefix, quote });
      i = j + quote.length;
      continue;
    }
    i++;
  }
  return literals;
}

/**
 * What an expression prints into criteria code: nothing when undefined (as Jinja2 prints it), a
 * Python literal for a number, a boolean or None, else a marker for the value passed as data.
 */
const CODE_VALUE = `{%- macro __agentrelay_code(v) -%}{%- if v is undefined -%}{%- elif v is none or v is boolean or v is number -%}{{ __agentrelay_print(v) }}{%- else -%}{{ v | __agentrelay_mark }}{%- endif -%}{%- endmacro -%}`;

/** Renders inline criteria code as cyberian does, with every text value referred to as data. */
export function criteriaCode(
  template: string,
  params: Record<string, unknown>,
): { code: string; values: unknown[] } {
  const { values: context, floats } = templateValues(params);
  const values: unknown[] = [];
  const mark = (value: unknown) => {
    values.push(value);
    return `__agentrelay_value_${values.length - 1}__`;
  };
  // Printed expressions go through the macro; pythonTemplate then prints its literals as Python does.
  const source = replaceBlocks(template, (block, text) =>
    block.kind === "expression"
      ? `{{${block.open} __agentrelay_code(${block.body.trim()}) ${block.close}}}`
      : text,
  );
  const rendered = renderTemplate(CODE_VALUE + pythonTemplate(source, floats), context, {
    lenient: true,
    filters: { __agentrelay_mark: mark },
  });
  let out = "";
  let cursor = 0;
  const refer = (text: string) => text.replace(MARKER, (_, k: string) => `${VALUES}[${k}]`);
  for (const literal of stringLiterals(rendered)) {
    out += refer(rendered.slice(cursor, literal.start));
    const body = rendered.slice(
      literal.start + literal.prefix.length + literal.quote.length,
      literal.end - literal.quote.length,
    );
    MARKER.lastIndex = 0;
    if (literal.quote === "" || !MARKER.test(body)) {
      out += rendered.slice(literal.start, literal.end);
    } else {
      const open = `${literal.prefix}${literal.quote}`;
      // Even parts are literal text, odd parts the numbers of marked values.
      const parts = body.split(/__agentrelay_value_(\d+)__/);
      out += `(${parts.map((part, k) => (k % 2 === 0 ? `${open}${part}${literal.quote}` : `str(${VALUES}[${part}])`)).join(" + ")})`;
    }
    cursor = literal.end;
  }
  out += refer(rendered.slice(cursor));
  return { code: out, values };
}

/** The harness: reads {code, values, params} on stdin, runs the code, and reports its verdict. */
const HARNESS = `
import json, sys, traceback
data = json.load(sys.stdin)
namespace = {"${VALUES}": data["values"], "params": data["params"], "__name__": "__success_criteria__"}
try:
    exec(compile(data["code"], data["name"], "exec"), namespace)
except Exception:
    print("Error executing success criteria:\\n" + traceback.format_exc(limit=3), end="")
    sys.exit(2)
result = namespace.get("result")
if result is None:
    print("Success criteria did not set 'result'", end=""); sys.exit(3)
if not isinstance(result, bool):
    print("Success criteria must set 'result' to True or False, not %r" % (result,), end=""); sys.exit(3)
if not result:
    detail = namespace.get("error_message") or namespace.get("error") or ""
    print("Success criteria validation failed: result = False" + ("\\n" + str(detail) if detail else ""), end=""); sys.exit(1)
`;

export interface CriteriaVerdict {
  passed: boolean;
  /** What went wrong, including the code's own output: given back to the agent as `{{ error }}`. */
  error: string;
}

export async function runCriteria(
  criteria: { python: string | null; script: string | null },
  params: Record<string, unknown>,
  options: {
    cwd: string;
    workflowDir: string;
    timeoutMs: number;
    env: NodeJS.ProcessEnv;
    confine?: Confinement;
  },
): Promise<CriteriaVerdict> {
  let input: { code: string; values: unknown[]; name: string };
  if (criteria.python !== null) {
    try {
      input = { ...criteriaCode(criteria.python, params), name: "<success_criteria.python>" };
    } catch (error) {
      if (!(error instanceof TemplateError)) throw error;
      return { passed: false, error: `success_criteria.python does not render: ${error.message}` };
    }
  } else {
    // Beside the workflow file, else from the checkout's root; never outside either (links included).
    let script: string | undefined;
    try {
      script = [options.workflowDir, options.cwd]
        .map((base) => insideRepository(base, base, criteria.script!, "success criteria script"))
        .find(existsSync);
    } catch (error) {
      if (!(error instanceof OutsideRepositoryError)) throw error;
      return { passed: false, error: error.message };
    }
    if (!script) return { passed: false, error: `success criteria script '${criteria.script}' not found` };
    input = { code: readFileSync(script, "utf8"), values: [], name: script };
  }
  const run = await runBounded("python3", ["-c", HARNESS], {
    cwd: options.cwd,
    env: options.env,
    timeoutMs: options.timeoutMs,
    ...(options.confine ? { confine: options.confine } : {}),
    input: JSON.stringify({ ...input, params }),
  });
  if (run.code === -1) return { passed: false, error: `cannot run python3: ${run.stderr.trim()}` };
  if (run.timedOut)
    return {
      passed: false,
      error: `success criteria did not finish within ${Math.round(options.timeoutMs / 1000)} s`,
    };
  return {
    passed: run.code === 0,
    error: run.code === 0 ? "" : run.output.trim() || `success criteria exited with code ${run.code}`,
  };
}

/**
 * cyberian's `success_criteria`, run in the job with the params passed as data, never pasted into code.
 *
 * Inline Python may use `{{ expr }}` (the fixtures do: `open('{{workdir}}/SUMMARY_1.md')`, `<= {{n // 2}}`).
 * Each expression is evaluated with the Jinja engine to a typed value, and the code refers to it as
 * data: `{{ n // 2 }}` becomes `__agentrelay_values[0]`, and inside a string literal the literal is
 * split around it (`('' + str(__agentrelay_values[1]) + '/SUMMARY_1.md')`). The values travel as JSON
 * on stdin, so a param such as `'); import os; os.system('x'); ('` stays a string.
 */
import { existsSync, readFileSync } from "node:fs";
import { evaluateExpression } from "../template/jinja.ts";
import { runBounded } from "./bounded.ts";
import { insideRepository, OutsideRepositoryError } from "./paths.ts";

const VALUES = "__agentrelay_values";

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

/** Rewrites inline criteria code so that every `{{ expr }}` refers to a value passed as data. */
export function criteriaCode(
  template: string,
  params: Record<string, unknown>,
): { code: string; values: unknown[] } {
  const values: unknown[] = [];
  const slot = (expression: string) => {
    values.push(evaluateExpression(expression, params));
    return `${VALUES}[${values.length - 1}]`;
  };
  const literals = stringLiterals(template);
  let out = "";
  let cursor = 0;
  const expressions = /\{\{(.*?)\}\}/gs;
  for (const literal of literals) {
    out += template.slice(cursor, literal.start).replace(expressions, (_, e: string) => slot(e));
    const body = template.slice(
      literal.start + literal.prefix.length + literal.quote.length,
      literal.end - literal.quote.length,
    );
    if (literal.quote === "" || !expressions.test(body)) {
      out += template.slice(literal.start, literal.end);
    } else {
      expressions.lastIndex = 0;
      const open = `${literal.prefix}${literal.quote}`;
      const parts = body.split(expressions);
      // Even parts are literal text, odd parts expressions.
      out += `(${parts.map((part, k) => (k % 2 === 0 ? `${open}${part}${literal.quote}` : `str(${slot(part)})`)).join(" + ")})`;
    }
    expressions.lastIndex = 0;
    cursor = literal.end;
  }
  out += template.slice(cursor).replace(expressions, (_, e: string) => slot(e));
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
  options: { cwd: string; workflowDir: string; timeoutMs: number; env: NodeJS.ProcessEnv },
): Promise<CriteriaVerdict> {
  let input: { code: string; values: unknown[]; name: string };
  if (criteria.python !== null) {
    input = { ...criteriaCode(criteria.python, params), name: "<success_criteria.python>" };
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

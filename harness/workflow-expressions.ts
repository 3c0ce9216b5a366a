/**
 * GitHub Actions expressions evaluated as GitHub evaluates them (`@actions/expressions`, GitHub's own
 * implementation), so that the stand-in and the tests read a workflow's `if` and `concurrency.group`
 * from the file users install instead of restating them.
 */
import { data, Evaluator, Lexer, Parser } from "@actions/expressions";
import { truthy } from "@actions/expressions/result";

/** The `github` context of a run started by `event` with `payload` (the fields expressions here read). */
export function githubContext(event: string, payload: object, repository = "octo/demo", sha = ""): object {
  return { event_name: event, event: payload, repository, sha };
}

/** The value of one expression (without `${{ }}`) in the context. */
export function evaluate(expression: string, context: Record<string, object>): data.ExpressionData {
  const lexed = new Lexer(expression).lex();
  const parsed = new Parser(lexed.tokens, Object.keys(context), []).parse();
  const dictionary = JSON.parse(JSON.stringify(context), data.reviver) as data.Dictionary;
  return new Evaluator(parsed, dictionary).evaluate();
}

/** A string with `${{ }}` parts, as a workflow's `concurrency.group` is written. */
export function interpolate(template: string, context: Record<string, object>): string {
  return template.replace(/\$\{\{([\s\S]*?)\}\}/g, (_, expression: string) =>
    evaluate(expression.trim(), context).coerceString(),
  );
}

/** A job's `if` (GitHub reads a bare expression, or one in `${{ }}`). */
export function condition(text: string | undefined, context: Record<string, object>): boolean {
  if (text === undefined) return true;
  const bare = text.trim().replace(/^\$\{\{([\s\S]*)\}\}$/, "$1");
  return truthy(evaluate(bare, context));
}

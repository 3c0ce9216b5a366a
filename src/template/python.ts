/**
 * cyberian renders its templates with Jinja2 over Python values, so what a template prints is what
 * Python's `str()` prints: `True`, `None`, `1.0`, `['a', 1]`, `{'k': False}`. MiniJinja prints
 * `true`, `none` and JSON-like lists. Each `{{ expression }}` is therefore printed through a macro
 * that formats its value as Python does, written in the template language itself so that MiniJinja's
 * own types decide (an integer and a float differ there, not in JavaScript).
 *
 * A float param with a whole value (`ratio: 1.0`) reaches the engine as a JavaScript number, which
 * cannot say it was a float: the names of such params travel beside the values (see graph/params.ts)
 * and are made floats again (`{% set ratio = ratio | float %}`) before the template runs.
 */
import { replaceBlocks, templateBlocks } from "./blocks.ts";

const PRINT = "__agentrelay_print";
const REPR = "__agentrelay_repr";

// str() of a value, and repr() of the items of a list or a mapping (Python quotes strings there).
const MACROS =
  `{%- macro ${REPR}(v) -%}` +
  `{%- if v is string -%}` +
  `{%- if "'" in v and '"' not in v -%}"{{ v | replace("\\\\", "\\\\\\\\") | replace("\\n", "\\\\n") }}"` +
  `{%- else -%}'{{ v | replace("\\\\", "\\\\\\\\") | replace("'", "\\\\'") | replace("\\n", "\\\\n") }}'{%- endif -%}` +
  `{%- else -%}{{ ${PRINT}(v) }}{%- endif -%}` +
  `{%- endmacro -%}` +
  `{%- macro ${PRINT}(v) -%}` +
  `{%- if v is none -%}None` +
  `{%- elif v is true -%}True` +
  `{%- elif v is false -%}False` +
  `{%- elif v is string or v is number -%}{{ v }}` +
  `{%- elif v is mapping -%}{{ "{" }}{%- for k, x in v | items -%}{{ ${REPR}(k) }}: {{ ${REPR}(x) }}{{ ", " if not loop.last }}{%- endfor -%}{{ "}" }}` +
  `{%- elif v is sequence -%}[{%- for x in v -%}{{ ${REPR}(x) }}{{ ", " if not loop.last }}{%- endfor -%}]` +
  `{%- else -%}{{ v }}{%- endif -%}` +
  `{%- endmacro -%}`;

/**
 * The template with every printed expression formatted as Python prints it, and the given float
 * params made floats first. Nothing is added to the output: the macros and `set`s print nothing.
 */
export function pythonTemplate(source: string, floats: readonly string[] = []): string {
  const body = replaceBlocks(source, (block, text) =>
    block.kind === "expression" ? `{{${block.open}${PRINT}(${block.body.trim()})${block.close}}}` : text,
  );
  const sets = floats
    .filter((name) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    .map((name) => `{% set ${name} = ${name} | float %}`)
    .join("");
  // The macros end in `-%}`, which would eat the template's leading whitespace: a `set` of nothing
  // (or the float `set`s) stands between them and the template's first character.
  return `${MACROS}{% set ${PRINT}_ready = true %}${sets}${body}`;
}

const KEYWORDS = new Set(
  "and or not in is if else elif endif for endfor set endset macro endmacro call endcall filter endfilter with endwith block endblock extends include import from as recursive raw endraw true false none True False None loop self super caller varargs kwargs range dict namespace lipsum cycler joiner".split(
    " ",
  ),
);

/**
 * The variable a template uses without a value: the first name read in an expression or statement
 * (on `line`, when the engine said which) that the template neither receives nor defines itself.
 */
export function undefinedName(
  source: string,
  values: Record<string, unknown>,
  line?: number,
): { name: string; line: number } | null {
  const defined = new Set(Object.keys(values));
  for (const m of source.matchAll(/\{%-?\s*(?:set|for|macro)\s+([\w\s,]+?)(?:=|\sin\s|\()/g))
    for (const name of m[1]!.split(",")) defined.add(name.trim());
  const lineOf = (index: number) => source.slice(0, index).split("\n").length;
  const spans = templateBlocks(source).filter(
    (b) =>
      (b.kind === "expression" || b.kind === "statement") && (line === undefined || lineOf(b.start) === line),
  );
  for (const block of spans) {
    const code = block.body.replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"/g, "''");
    for (const id of code.matchAll(/(?<![.\w|])\b([A-Za-z_]\w*)\b(?!\s*=[^=])/g)) {
      const name = id[1]!;
      const before = code.slice(0, id.index).trimEnd();
      if (KEYWORDS.has(name) || defined.has(name) || /\bis$/.test(before)) continue;
      return { name, line: lineOf(block.start) };
    }
  }
  return null;
}

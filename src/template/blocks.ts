/**
 * Where a Jinja template's blocks are: `{{ expression }}`, `{% statement %}`, `{# comment #}` and
 * `{% raw %}…{% endraw %}`. A string literal inside a block may hold the delimiters themselves, as
 * Jinja2's documentation on escaping shows (`{{ '{{' }}`, `{{ '}}' }}`): the lexer reads strings as
 * strings, so a quoted `}}` does not end the block. Text that only looks like a block inside
 * `raw` or a comment is not one.
 */

export interface TemplateBlock {
  kind: "expression" | "statement" | "comment" | "raw";
  /** Offsets of the whole block in the template, delimiters included. */
  start: number;
  end: number;
  /** What stands between the delimiters and their whitespace markers (`-`, `+`). */
  body: string;
  /** The whitespace markers written at each end (`{{-` gives "-"), or "". */
  open: string;
  close: string;
}

const RAW_START = /\{%[-+]?\s*raw\s*[-+]?%\}/y;
const RAW_END = /\{%[-+]?\s*endraw\s*[-+]?%\}/g;

/** The offset just past the closing `close` of a block whose body starts at `from`, strings skipped. */
function endOf(source: string, from: number, close: string): number {
  for (let i = from; i < source.length; i++) {
    const c = source[i];
    if (c === "'" || c === '"') {
      for (i++; i < source.length && source[i] !== c; i++) if (source[i] === "\\") i++;
    } else if (source.startsWith(close, i)) return i + close.length;
  }
  return -1;
}

/** The blocks of `source`, in order; an unterminated one ends the list (the engine reports it). */
export function templateBlocks(source: string): TemplateBlock[] {
  const blocks: TemplateBlock[] = [];
  let at = 0;
  for (;;) {
    const start = source.indexOf("{", at);
    if (start < 0 || start + 1 >= source.length) return blocks;
    const kind = source[start + 1];
    if (kind !== "{" && kind !== "%" && kind !== "#") {
      at = start + 1;
      continue;
    }
    RAW_START.lastIndex = start;
    if (kind === "%" && RAW_START.test(source)) {
      RAW_END.lastIndex = RAW_START.lastIndex;
      const end = RAW_END.exec(source);
      const stop = end ? end.index + end[0].length : source.length;
      blocks.push({ kind: "raw", start, end: stop, body: source.slice(start, stop), open: "", close: "" });
      if (!end) return blocks;
      at = stop;
      continue;
    }
    const close = kind === "{" ? "}}" : kind === "%" ? "%}" : "#}";
    const stop = kind === "#" ? source.indexOf(close, start + 2) + 2 : endOf(source, start + 2, close);
    if (stop < 2) return blocks;
    let body = source.slice(start + 2, stop - 2);
    const open = /^[-+]/.test(body) ? body[0]! : "";
    const closeMark = /[-+]$/.test(body) ? body[body.length - 1]! : "";
    body = body.slice(open.length, body.length - closeMark.length);
    const kinds = { "{": "expression", "%": "statement", "#": "comment" } as const;
    blocks.push({ kind: kinds[kind], start, end: stop, body, open, close: closeMark });
    at = stop;
  }
}

/** `source` with each block replaced by what `replace` gives for it (the block itself to keep it). */
export function replaceBlocks(
  source: string,
  replace: (block: TemplateBlock, text: string) => string,
): string {
  let out = "";
  let at = 0;
  for (const block of templateBlocks(source)) {
    out += source.slice(at, block.start) + replace(block, source.slice(block.start, block.end));
    at = block.end;
  }
  return out + source.slice(at);
}

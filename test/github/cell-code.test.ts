/**
 * Long ids and branches as code (github/words.ts's code), in table cells and in lines: written as
 * `<code>` with `<wbr>` so that a table of 80-character ids, or a line naming a branch of 150, keeps
 * within the 806 px comment (drawn in browser-render), and read back by markdown as exactly the text
 * they stand for, whatever a branch name holds.
 */
import { marked } from "marked";
import { describe, expect, it } from "vitest";
import { cellCode, code, quoteIds } from "../../src/github/words.ts";
import type { Plan } from "../../src/plan/model.ts";

/** The one cell of a one-row table holding `markdown`, as HTML. */
const cellHtml = (markdown: string): string => {
  const html = marked.parse(`| a |\n|---|\n| ${markdown} |\n`, { gfm: true, async: false }) as string;
  return /<td>([\s\S]*?)<\/td>/.exec(html)![1]!;
};

/** The text a reader sees and copies: tags gone, references decoded. */
const text = (html: string): string =>
  html
    .replace(/<[^>]+>/g, "")
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, "&");

describe("an id or a branch as code in a table cell", () => {
  it("stays a code span while short", () => {
    expect(cellCode("w0_t12")).toBe("`w0_t12`");
    expect(code("agentrelay/payments/ws_3/integration")).toBe("`agentrelay/payments/ws_3/integration`");
  });

  it.each([
    [
      "an 80-character id in capitals",
      `${"RECONCILE_LEDGER_ENTRIES_WITH_BANK_STATEMENTS_".repeat(2)}`.slice(0, 80),
    ],
    ["an 80-character id with no separator", "A".repeat(80)],
    ["a branch markdown and HTML would read", "feature/a|b<c>&d_*x*_`y`~z~[l](u)\\_émile/ö𝔘_end"],
  ])("%s: breakable code, read back as the same text", (_, id) => {
    const html = cellHtml(cellCode(id));
    expect(html).toMatch(/^<code>[\s\S]*<\/code>$/);
    expect(html).not.toMatch(/<(em|strong|del|a)\b/);
    expect(text(html)).toBe(id);
    // A break opportunity at least every 17 characters, so no piece is wider than about 120 px.
    for (const piece of html.split("<wbr>")) expect(text(piece).length).toBeLessThanOrEqual(17);
  });
});

describe("a reason's code spans in a line", () => {
  const line = (markdown: string): string => {
    const html = marked.parse(`- ${markdown}`, { gfm: true, async: false }) as string;
    return /<li>([\s\S]*?)<\/li>/.exec(html)![1]!;
  };
  const integration = `agentrelay/LEDGER_RECONCILIATION/${"PAYMENTS_AND_MOBILE_WALLET_".repeat(3)}/integration`;
  const reason = `merge \`${integration}\` into \`agentrelay/g/t_1\` by hand: they conflict in \`a|b*c*.py\``;

  it("breaks a long span, keeps a short one, and reads back as the same text", () => {
    const shown = quoteIds(reason);
    expect(shown).toContain(code(integration));
    expect(shown).toContain("`agentrelay/g/t_1`");
    expect(shown).not.toContain(`\`${integration}\``);
    expect(text(line(shown))).toBe(text(line(reason)));
  });

  it("leaves an id quoted inside a span as written, and a backtick a backslash escapes to markdown", () => {
    const id = "a_very_long_task_identifier_of_thirty_chars";
    const plan = { tasks: new Map([[id, {}]]), workstreams: new Map() } as unknown as Plan;
    const span = `\`agentrelay retry '${id}' at once, then look at the branch\``;
    expect(quoteIds(`dependency '${id}' failed`, plan)).toBe(`dependency \`${id}\` failed`);
    expect(quoteIds(span, plan)).toBe(code(span.slice(1, -1)));
    expect(quoteIds(`\\${span}`)).toBe(`\\${span}`);
  });
});

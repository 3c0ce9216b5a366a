/**
 * The run's closing lines, in words: how many tests ran and how they ended, and why each skipped
 * one was skipped (vitest's default reporter counts them, "9 skipped", without a reason). A test
 * skips with a note (`context.skip(note)`, see skips.ts); one that skips without a note is listed as
 * such, so that it gets one. Plain text: no colour codes.
 */
import { relative } from "node:path";
import type { Reporter, TestModule, Vitest } from "vitest/node";

const number = (n: number) => n.toLocaleString("en-US");
const tests = (n: number) => `${number(n)} test${n === 1 ? "" : "s"}`;

export default class SkipReasons implements Reporter {
  /** With `-t`, the tests left out are skipped too, without a note: only notes are listed then. */
  private filtered = false;

  onInit(vitest: Vitest): void {
    this.filtered = Boolean(vitest.config.testNamePattern);
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    process.stdout.write(closingLines(modules, this.filtered));
  }
}

/** What the run did, one line, then one line per reason tests were skipped. */
export function closingLines(modules: ReadonlyArray<TestModule>, filtered = false): string {
  const reasons = new Map<string, { tests: number; files: Set<string> }>();
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  for (const module of modules)
    for (const test of module.children.allTests()) {
      const result = test.result();
      if (result.state === "passed") passed++;
      else if (result.state === "failed") failed++;
      if (result.state !== "skipped") continue;
      const note = result.note;
      if (test.options.mode === "todo" || (!note && filtered)) continue;
      skipped++;
      const reason = note ?? "no reason given: skip it with a note (test/support/skips.ts)";
      const entry = reasons.get(reason) ?? { tests: 0, files: new Set<string>() };
      entry.tests++;
      entry.files.add(relative(process.cwd(), module.moduleId));
      reasons.set(reason, entry);
    }
  const files = `${number(modules.length)} file${modules.length === 1 ? "" : "s"}`;
  const lines = [
    ` Ran ${tests(passed + failed)} in ${files}: ${number(passed)} passed, ${number(failed)} failed; ` +
      (skipped === 0 ? "none skipped." : `${tests(skipped)} skipped, and why:`),
  ];
  for (const [reason, entry] of reasons)
    lines.push(` - ${tests(entry.tests)}: ${reason} (${[...entry.files].join(", ")})`);
  return `${lines.join("\n")}\n`;
}

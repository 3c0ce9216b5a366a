/**
 * Says why tests were skipped, at the end of the run: vitest's default reporter counts them ("9
 * skipped") without a reason. A test skips with a note (`context.skip(note)`, see skips.ts); one that
 * skips without a note is listed as such, so that it gets one.
 */
import { relative } from "node:path";
import type { Reporter, TestModule, Vitest } from "vitest/node";

export default class SkipReasons implements Reporter {
  /** With `-t`, the tests left out are skipped too, without a note: only notes are listed then. */
  private filtered = false;

  onInit(vitest: Vitest): void {
    this.filtered = Boolean(vitest.config.testNamePattern);
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const reasons = new Map<string, { tests: number; files: Set<string> }>();
    for (const module of modules)
      for (const test of module.children.allTests("skipped")) {
        const result = test.result();
        const note = result.state === "skipped" ? result.note : undefined;
        if (test.options.mode === "todo" || (!note && this.filtered)) continue;
        const reason = note ?? "no reason given: skip it with a note (test/support/skips.ts)";
        const entry = reasons.get(reason) ?? { tests: 0, files: new Set<string>() };
        entry.tests++;
        entry.files.add(relative(process.cwd(), module.moduleId));
        reasons.set(reason, entry);
      }
    for (const [reason, { tests, files }] of reasons)
      process.stdout.write(` ↓ ${tests} skipped: ${reason} (${[...files].join(", ")})\n`);
  }
}

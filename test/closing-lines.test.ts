/**
 * The suite's closing lines as `npm test` prints them into a file or a pipe: what ran, what was
 * skipped and why, and no colour codes (test/support/skip-reporter.ts, scripts/vitest.mjs).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { WAIT_MS } from "../harness/patience.ts";
import { REPO_ROOT } from "./support/fixtures.ts";

it("say what ran, what was skipped and why, in plain text when not written to a terminal", () => {
  const dir = mkdtempSync(join(tmpdir(), "agentrelay-closing-"));
  // Globals: the file is outside the repository, where `import "vitest"` would not resolve.
  writeFileSync(
    join(dir, "sample.test.ts"),
    [
      'it("passes", () => expect(1).toBe(1));',
      'it("needs a thing", (context) => context.skip("the thing is missing here"));',
      'it.skip("skips without a note", () => {});',
    ].join("\n"),
  );
  const { FORCE_COLOR: _, NO_COLOR: __, ...env } = process.env;
  const run = spawnSync(
    process.execPath,
    [
      join(REPO_ROOT, "scripts/vitest.mjs"),
      "--globals",
      "--reporter=default",
      `--reporter=${join(REPO_ROOT, "test/support/skip-reporter.ts")}`,
    ],
    { cwd: dir, env: { ...env, TERM: "xterm-256color" }, encoding: "utf8", timeout: WAIT_MS },
  );
  expect(run.status, run.stderr).toBe(0);
  expect(run.stdout).not.toContain("\x1b[");
  const closing = run.stdout.slice(run.stdout.indexOf(" Ran "));
  expect(closing).toBe(
    [
      " Ran 1 test in 1 file: 1 passed, 0 failed; 2 tests skipped, and why:",
      " - 1 test: the thing is missing here (sample.test.ts)",
      " - 1 test: no reason given: skip it with a note (test/support/skips.ts) (sample.test.ts)",
      "",
    ].join("\n"),
  );
});

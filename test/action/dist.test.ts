import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/fixtures.ts";

describe("the committed bundles (the Action, the orchestrator, the command line a clone runs)", () => {
  it("are what the sources build today (run `npm run bundle` after changing them)", () => {
    const out = mkdtempSync(join(tmpdir(), "agentrelay-dist-"));
    execFileSync(process.execPath, ["scripts/bundle-action.mjs", out], { cwd: REPO_ROOT });
    for (const file of [
      "action/index.js",
      "action/minijinja_js_bg.wasm",
      "orchestrate/index.js",
      "cli/index.js",
    ]) {
      const fresh = readFileSync(join(out, file));
      const committed = readFileSync(join(REPO_ROOT, "dist", file));
      expect(committed.equals(fresh), `dist/${file} is stale`).toBe(true);
    }
  });
});

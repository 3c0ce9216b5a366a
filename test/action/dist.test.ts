import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/fixtures.ts";

describe("the committed Action bundle", () => {
  it("is what the sources build today (run `npm run bundle` after changing them)", () => {
    const out = mkdtempSync(join(tmpdir(), "agentrelay-dist-"));
    execFileSync(process.execPath, ["scripts/bundle-action.mjs", out], { cwd: REPO_ROOT });
    for (const file of ["index.js", "minijinja_js_bg.wasm"]) {
      const fresh = readFileSync(join(out, file));
      const committed = readFileSync(join(REPO_ROOT, "dist/action", file));
      expect(committed.equals(fresh), `dist/action/${file} is stale`).toBe(true);
    }
  });
});

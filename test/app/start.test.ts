import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/fixtures.ts";

describe("npm start", () => {
  it("without credentials opens Probot's setup page, which registers the app from app.yml", async () => {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const child = spawn(process.execPath, [join(REPO_ROOT, "lib/app.js")], {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: mkdtempSync(join(tmpdir(), "agentrelay-start-")),
        PORT: String(port),
        NO_SMEE_SETUP: "true",
        LOG_LEVEL: "error",
      },
      stdio: "ignore",
    });
    try {
      let page = "";
      for (let i = 0; i < 100 && !page; i++) {
        await new Promise((done) => setTimeout(done, 100));
        page = await fetch(`http://127.0.0.1:${port}/probot`).then(
          (r) => r.text(),
          () => "",
        );
      }
      // The manifest the page posts to GitHub carries app.yml's events and permissions.
      const manifest = JSON.parse(
        /name="manifest" id="manifest" value='([^']*)'/
          .exec(page)![1]!
          .replace(/&quot;/g, '"')
          .replace(/&amp;/g, "&"),
      );
      expect(manifest.default_events).toEqual([
        "push",
        "pull_request",
        "workflow_run",
        "check_suite",
        "check_run",
        "issue_comment",
      ]);
      expect(manifest.default_permissions).toMatchObject({
        actions: "write",
        contents: "write",
        metadata: "read",
      });
      expect(manifest.default_permissions).not.toHaveProperty("workflows");
    } finally {
      child.kill();
    }
  });
});

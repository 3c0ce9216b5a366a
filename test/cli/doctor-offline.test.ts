/**
 * `agentrelay doctor` when GitHub cannot be reached: one line saying what was not checked and why, in
 * words (no ENOTFOUND, ECONNREFUSED or "bad port"), after what it could check offline: the
 * checkout's workflow files. No network: a closed loopback port, a name that cannot resolve, and a
 * malformed address.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { doctorCommand } from "../../src/cli/commands/doctor.ts";
import { REPO_ROOT } from "../support/fixtures.ts";

/** A checkout of octo/demo with the no-app workflows, but the task workflow from before the hand-over. */
function checkout(): string {
  const dir = mkdtempSync(join(tmpdir(), "agentrelay-doctor-offline-"));
  execFileSync("git", ["init", "-q", "-b", "main", dir]);
  execFileSync("git", ["-C", dir, "remote", "add", "origin", "https://github.com/octo/demo.git"]);
  mkdirSync(join(dir, ".github/workflows"), { recursive: true });
  const template = (f: string) => readFileSync(join(REPO_ROOT, "templates/workflows/no-app", f), "utf8");
  writeFileSync(join(dir, ".github/workflows/agentrelay.yml"), template("agentrelay.yml"));
  writeFileSync(join(dir, ".github/workflows/agentrelay-schedule.yml"), template("agentrelay-schedule.yml"));
  writeFileSync(
    join(dir, ".github/workflows/agentrelay-task.yml"),
    template("agentrelay-task.yml").replace(
      /\n {2}# The orchestrator learns that this run ended[\s\S]*$/,
      "\n",
    ),
  );
  writeFileSync(join(dir, ".github/workflows/ci.yml"), "on: [pull_request\n");
  return dir;
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

async function doctor(dir: string, apiUrl: string): Promise<{ code: number; out: string }> {
  let out = "";
  const code = await doctorCommand(
    { apiUrl, dir },
    { out: (t) => void (out += `${t}\n`), err: (t) => void (out += `${t}\n`) },
    { GITHUB_TOKEN: "ghp_offline" },
  );
  return { code, out };
}

describe("agentrelay doctor without GitHub", () => {
  it("checks the checkout's workflow files and says in one line what it could not check, and why", async () => {
    const dir = checkout();
    const cases: [string, string][] = [
      [`http://127.0.0.1:${await closedPort()}`, "127.0.0.1:\\d+: nothing answers at that address"],
      [
        "https://api.github.invalid",
        "api\\.github\\.invalid: its name does not resolve \\(offline, or no DNS\\)",
      ],
      ["http://localhost:99999", "the API address http://localhost:99999 is not a (valid )?URL"],
    ];
    for (const [apiUrl, why] of cases) {
      const { code, out } = await doctor(dir, apiUrl);
      expect(code).toBe(1);
      expect(out).not.toMatch(/ENOTFOUND|ECONNREFUSED|EAI_AGAIN|bad port|getaddrinfo|fetch failed/);
      const lines = out.trim().split("\n");
      expect(lines.at(-1)).toMatch(
        new RegExp(
          `^octo/demo: GitHub's side was not checked \\(${why}\\): merge methods, rules and required checks, secrets and Actions settings; the checkout's workflow files were: connect, then run doctor again$`,
        ),
      );
      // Offline, the checkout's own files: an unreadable workflow, a task workflow to rewrite.
      expect(lines).toContain("octo/demo (this checkout): `ci.yml` is not a readable workflow: fix its YAML");
      expect(
        lines.some((l) => l.includes("`agentrelay-task.yml` does not hand over to the orchestrator")),
      ).toBe(true);
    }
  });
});

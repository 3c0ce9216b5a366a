/**
 * `agentrelay init --no-app --gh`: the Anthropic secret and the Actions PR setting made through the
 * GitHub CLI, with a logging stand-in for `gh` first on the PATH: the key reaches gh on its standard
 * input only (never its arguments or environment), the setting through the Actions permissions API,
 * and the next steps leave out what was done; an organisation that does not allow it is named.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { initCommand } from "../../src/cli/commands/init.ts";

const KEY = "sk-ant-api03-init-gh-test-key";
const saved = {
  PATH: process.env.PATH,
  ANTHROPIC_API_KEY: process.env.ANTHROPIC_API_KEY,
  GITHUB_TOKEN: process.env.GITHUB_TOKEN,
  GH_TOKEN: process.env.GH_TOKEN,
  GH_STANDIN: process.env.GH_STANDIN,
};
afterEach(() => {
  for (const [name, value] of Object.entries(saved))
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
});

/** A `gh` that logs each call (arguments, standard input, whether a credential is in its environment). */
function ghStandin(): { bin: string; log: string } {
  const bin = mkdtempSync(join(tmpdir(), "agentrelay-gh-"));
  const log = join(bin, "calls.jsonl");
  writeFileSync(
    join(bin, "gh"),
    `#!${process.execPath}
const fs = require("node:fs");
const input = fs.readFileSync(0, "utf8");
const args = process.argv.slice(2);
fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify({ args, input, envKey: Boolean(process.env.ANTHROPIC_API_KEY) }) + "\\n");
if (args[0] === "auth") process.exit(1);
if (args[0] === "api" && process.env.GH_STANDIN === "org") {
  process.stderr.write("gh: Conflict (HTTP 409)\\n");
  process.exit(1);
}
`,
  );
  chmodSync(join(bin, "gh"), 0o755);
  return { bin, log };
}

function repository(): string {
  const dir = mkdtempSync(join(tmpdir(), "agentrelay-init-gh-"));
  const git = (...args: string[]) => execFileSync("git", args, { cwd: dir });
  git("init", "-q", "-b", "main");
  git("remote", "add", "origin", "git@github.com:octo/demo.git");
  mkdirSync(join(dir, "src"));
  writeFileSync(join(dir, "src/x"), "x\n");
  git("add", ".");
  git("-c", "user.name=u", "-c", "user.email=u@e", "commit", "-q", "-m", "x");
  return dir;
}

async function init(dir: string): Promise<string> {
  let out = "";
  const code = await initCommand(
    {
      repo: dir,
      force: false,
      noApp: true,
      gh: true,
      action: "acme/agentrelay@v3",
      image: "registry.acme.dev/agent:7",
    },
    { out: (t) => void (out += `${t}\n`), err: (t) => void (out += `${t}\n`) },
  );
  expect(code, out).toBe(0);
  return out;
}

describe("init --no-app --gh", () => {
  it("sets the secret with the key on gh's standard input, and the Actions PR setting; the next steps are fewer", async () => {
    const { bin, log } = ghStandin();
    Object.assign(process.env, { PATH: `${bin}:${saved.PATH}`, ANTHROPIC_API_KEY: KEY });
    delete process.env.GITHUB_TOKEN;
    delete process.env.GH_TOKEN;
    const out = await init(repository());
    const calls = readFileSync(log, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { args: string[]; input: string; envKey: boolean });
    const secret = calls.find((c) => c.args[0] === "secret")!;
    expect(secret.args).toEqual(["secret", "set", "ANTHROPIC_API_KEY", "--repo", "octo/demo"]);
    expect(secret.input).toBe(KEY);
    for (const call of calls) expect(call.args.join(" ")).not.toContain(KEY);
    // The calls --gh makes hand gh no credential in its environment either.
    for (const call of calls.filter((c) => c.args[0] !== "auth")) expect(call.envKey).toBe(false);
    expect(calls.find((c) => c.args[0] === "api")!.args).toEqual([
      "api",
      "--method",
      "PUT",
      "repos/octo/demo/actions/permissions/workflow",
      "-F",
      "can_approve_pull_request_reviews=true",
    ]);
    expect(out).toContain(
      "set the secret ANTHROPIC_API_KEY of octo/demo through gh (the value from your environment, on gh's standard input)\n",
    );
    expect(out).toContain(
      'turned on "Allow GitHub Actions to create and approve pull requests" for octo/demo through gh\n',
    );
    expect(out).not.toContain("New repository secret");
    expect(out).not.toContain('tick "Allow GitHub Actions');
    expect(out).toContain("  2. Commit and push to the default branch");
    expect(out).toContain("the `workflow` scope");
    expect(out).not.toContain(KEY);
  });

  it("names the organisation's policy when it does not allow the setting, and keeps that step", async () => {
    const { bin } = ghStandin();
    Object.assign(process.env, { PATH: `${bin}:${saved.PATH}`, ANTHROPIC_API_KEY: KEY, GH_STANDIN: "org" });
    delete process.env.GITHUB_TOKEN;
    delete process.env.GH_TOKEN;
    const out = await init(repository());
    expect(out).toContain(
      "--gh: octo/demo's organisation does not allow GitHub Actions to create pull requests: an organisation owner turns it on (organisation Settings, Actions, General, Workflow permissions)\n",
    );
    expect(out).toContain(
      '  2. Settings > Actions > General > Workflow permissions: tick "Allow GitHub Actions',
    );
  });
});

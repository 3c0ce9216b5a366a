/**
 * `agentrelay doctor` on a checkout whose graphs span repositories: it says which of them the token
 * reaches and with what, and names each it cannot work in with the fix (a fine-grained token scoped as
 * GitHub scopes it: harness/fake-repositories.ts).
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { FakeRepositories } from "../../harness/fake-repositories.ts";
import { REPO_ROOT } from "../../harness/paths.ts";
import { main } from "../../src/cli/main.ts";
import { API_THEN_CLIENT, mountedRepositories } from "../support/repositories.ts";

const saved = { ...process.env };
let github: FakeRepositories;
beforeEach(() => {
  github = mountedRepositories([
    ["octo/api", 42],
    ["octo/web", 42],
    ["octo/lib", null],
  ]);
  process.env.GITHUB_TOKEN = "github_pat_doctor";
  delete process.env.GITHUB_API_URL;
});
afterEach(() => {
  nock.cleanAll();
  nock.enableNetConnect();
  for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
  Object.assign(process.env, saved);
});

/** A checkout holding `graphs` under .workflow/. */
function checkout(graphs: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "agentrelay-doctor-"));
  mkdirSync(join(dir, ".workflow"));
  for (const [file, text] of Object.entries(graphs)) writeFileSync(join(dir, ".workflow", file), text);
  return dir;
}

async function doctor(dir: string): Promise<{ code: number; out: string }> {
  let out = "";
  process.env.INIT_CWD = dir;
  const code = await main(["doctor", "--repo", "octo/demo"], {
    out: (t) => void (out += `${t}\n`),
    err: (t) => void (out += `${t}\n`),
  });
  return { code, out };
}

describe("agentrelay doctor on graphs that span repositories", () => {
  it("says which repositories the token reaches, and names the others with the fix", async () => {
    github.grant("github_pat_doctor", ["octo/demo", "octo/api", "octo/web"], "write");
    const dir = checkout({ "api-client.yaml": API_THEN_CLIENT });
    const reached = await doctor(dir);
    expect(reached.out).toContain(
      "octo/demo: .workflow/api-client.yaml spans repositories; the token reaches octo/api (write), octo/web (write)",
    );
    expect(reached.out).not.toMatch(/octo\/(api|web): /);

    github.grant("github_pat_doctor", ["octo/demo", "octo/web"], "read");
    const { code, out } = await doctor(
      checkout({ "api-client.yaml": API_THEN_CLIENT.replace("web: octo/web", "web: octo/lib") }),
    );
    const lines = out.split("\n");
    expect(lines).toContain(
      "octo/demo: .workflow/api-client.yaml: octo/api: not found, or the token may not read it: give the token access to it (a fine-grained token's Repository access), or use a GitHub App installed on it",
    );
    expect(lines.filter((l) => l.includes("octo/lib:"))).toHaveLength(1);
    expect(code).toBe(1);
  });

  it("names a workstream's repository whose task workflow is older than the run needs", async () => {
    github.grant("github_pat_doctor", ["octo/demo", "octo/api", "octo/web"], "write");
    const current = readFileSync(
      new URL("../../templates/workflows/agentrelay-task.yml", import.meta.url),
      "utf8",
    );
    github.get("octo/api").commit("main", { ".github/workflows/agentrelay-task.yml": current });
    const old = current.replace(/ {6}run-repository:\n(?: {8}.*\n)+/, "");
    github.get("octo/web").commit("main", { ".github/workflows/agentrelay-task.yml": old });
    const { code, out } = await doctor(checkout({ "api-client.yaml": API_THEN_CLIENT }));
    expect(out.split("\n").filter((l) => /older than/.test(l))).toEqual([
      "octo/demo: .workflow/api-client.yaml: octo/web: its .github/workflows/agentrelay-task.yml is older than this run needs (it does not declare the input run-repository): run `agentrelay init` there and push",
    ]);
    expect(code).toBe(1);
  });

  it("names a repository the token may read but not push to", async () => {
    github.grant("github_pat_doctor", ["octo/demo", "octo/api", "octo/web"], "read");
    const { code, out } = await doctor(checkout({ "api-client.yaml": API_THEN_CLIENT }));
    expect(out).toContain(
      "octo/demo: .workflow/api-client.yaml: octo/api: the token may read it but not push to it: give it Contents and Pull requests write there (a fine-grained token's Repository permissions), or use a GitHub App installed on it",
    );
    expect(code).toBe(1);
  });

  it("without an app, says what the orchestrator's own token needs, and what each workstream's repository needs: the workflows and the same credentials", async () => {
    github.grant("github_pat_doctor", ["octo/demo", "octo/api", "octo/web"], "write");
    const dir = checkout({ "api-client.yaml": API_THEN_CLIENT });
    mkdirSync(join(dir, ".github/workflows"), { recursive: true });
    writeFileSync(join(dir, ".github/workflows/agentrelay.yml"), "name: agentrelay\n");
    const unset = (repo: string) => [
      `octo/demo: .workflow/api-client.yaml: octo/${repo}: has no task workflow, and its workstream's jobs run there: run \`agentrelay init --no-app\` in it and push, and give it the variable AGENTRELAY_APP_CLIENT_ID as in this repository (organization variables and secrets make it one setting), with the secrets AGENTRELAY_APP_PRIVATE_KEY and AGENTRELAY_REPORT_SECRET this repository has`,
      `octo/demo: .workflow/api-client.yaml: octo/${repo}: its orchestrator cannot reach the run here: give it the variables AGENTRELAY_APP_CLIENT_ID and AGENTRELAY_REPOSITORIES (every repository of the graph, demo among them) as in this repository (organization variables and secrets make it one setting), with the secrets AGENTRELAY_APP_PRIVATE_KEY and AGENTRELAY_REPORT_SECRET this repository has`,
    ];
    const asGithubToken = await doctor(dir);
    expect(asGithubToken.out).toMatch(
      /^octo\/demo: \.workflow\/api-client\.yaml: octo\/web: the workflow's GITHUB_TOKEN reaches octo\/demo only: give the orchestrator a registered GitHub App's token/m,
    );
    for (const line of [...unset("api"), ...unset("web")]) expect(asGithubToken.out).toContain(line);
    const { variables } = github.first.settings;
    variables.set("AGENTRELAY_APP_CLIENT_ID", "Iv23demo");
    variables.set("AGENTRELAY_REPOSITORIES", "demo,api");
    const { out, code } = await doctor(dir);
    expect(out).toContain(
      "octo/demo: .workflow/api-client.yaml: the orchestrator's app token is minted for demo,api (the variable AGENTRELAY_REPOSITORIES): set it to demo,api,web",
    );
    expect(out).not.toContain("GITHUB_TOKEN reaches");
    expect(code).toBe(1);
    variables.set("AGENTRELAY_REPOSITORIES", "demo,api,web");
    // Each workstream's repository set up as `init --no-app` and the same settings make it.
    const task = readFileSync(join(REPO_ROOT, "templates/workflows/no-app/agentrelay-task.yml"), "utf8");
    for (const repo of ["api", "web"]) {
      const gh = github.get(`octo/${repo}`);
      gh.commit("main", { ".github/workflows/agentrelay-task.yml": task }, "init --no-app");
      gh.settings.variables.set("AGENTRELAY_APP_CLIENT_ID", "Iv23demo");
      gh.settings.variables.set("AGENTRELAY_REPOSITORIES", "demo,api,web");
    }
    const ready = await doctor(dir);
    expect(ready.out).not.toContain("AGENTRELAY_REPOSITORIES");
    expect(ready.out).not.toContain("task workflow");
  });
});

/**
 * Workflow mode with a registered app's token, for a graph that spans repositories: the orchestrator
 * workflow mints the token for the repositories the variable AGENTRELAY_REPOSITORIES names
 * (actions/create-github-app-token's `owner` and `repositories`; without them, "access will be scoped
 * to only the current repository", its README). What the token reaches is checked before anything is
 * written, and a graph naming a repository it was not minted for is refused at that repository's line.
 */
import nock from "nock";
import { afterEach, describe, expect, it } from "vitest";
import { pushPayload } from "../../harness/app.ts";
import { FakeRepositories } from "../../harness/fake-repositories.ts";
import { OrchestratorError, orchestrate } from "../../src/app/workflow.ts";
import { API_THEN_CLIENT } from "../support/repositories.ts";

afterEach(() => nock.cleanAll());

/**
 * The graph's repository octo/demo, and octo/api and octo/web, the app installed on all three, where
 * alice, who pushes the graph, may write.
 */
function repositories() {
  const github = new FakeRepositories();
  for (const name of ["octo/api", "octo/web"]) {
    github.add(name, 42);
    github.collaborator(name, "alice", "write");
  }
  github.mount();
  return github;
}

/** A token minted as the orchestrator workflow's first step mints it, for `names` (empty: all). */
async function minted(github: FakeRepositories, names: string[]): Promise<string> {
  const [status, body] = await github.serve("POST", "/app/installations/42/access_tokens", {
    ...(names.length ? { repositories: names } : {}),
  });
  expect(status).toBe(201);
  return (body as { token: string }).token;
}

/** The orchestrator's run for a push of the two-repository graph, as the workflow passes its inputs. */
async function pushed(github: FakeRepositories, token: string, variable: string) {
  const gh = github.first;
  const before = gh.branches.get("main")!;
  const after = gh.commit("main", { ".workflow/api-client.yaml": API_THEN_CLIENT }, "add the graph");
  const logged: string[] = [];
  const env = {
    GITHUB_REPOSITORY: "octo/demo",
    INPUT_TOKEN: token,
    "INPUT_APP-SLUG": "agentrelay-demo",
    INPUT_REPOSITORIES: variable,
    AGENTRELAY_GITHUB_PACING: "off",
  };
  const payload = pushPayload(gh, before, after, { added: [".workflow/api-client.yaml"] });
  const result = await orchestrate(env, {
    event: { name: "push", payload },
    log: (line) => logged.push(line),
  });
  const check = gh.checkRuns.find((c) => c.name === "agentrelay / .workflow/api-client.yaml");
  const annotations = (check?.output?.annotations ?? []) as { start_line: number; message: string }[];
  return { result, check, logged, lines: annotations.map((a) => `${a.start_line}: ${a.message}`) };
}

describe("workflow mode with a registered app's token, for a graph that spans repositories", () => {
  it("refuses a repository the token was not minted for, at its line, with the fix, before anything is written", async () => {
    const github = repositories();
    const token = await minted(github, ["demo", "api"]);
    const { check, lines, logged } = await pushed(github, token, "demo,api");
    expect(check?.conclusion).toBe("failure");
    expect(lines).toEqual([
      "4: octo/web: the orchestrator's app token does not reach it: install the registered app on it (the owner's settings, GitHub Apps, Configure, Repository access) and add web to the repository variable AGENTRELAY_REPOSITORIES of octo/demo (comma-separated, with demo), then push the graph again",
    ]);
    for (const gh of github.repositories.values()) expect([...gh.branches].map(([b]) => b)).toEqual(["main"]);
    expect(github.first.dispatches).toEqual([]);
    expect(logged.join("\n")).not.toContain(token);
  });

  it("lets the graph past the check once the token reaches every repository it names", async () => {
    const github = repositories();
    const token = await minted(github, ["demo", "api", "web"]);
    const { lines } = await pushed(github, token, "demo,api,web");
    // Nothing at the lines of octo/api and octo/web (3 and 4): whatever else is said is not about reach.
    expect(lines.filter((l) => /^[34]: /.test(l))).toEqual([]);
  });

  it("refuses, in one line and before asking GitHub anything, a variable that leaves out its own repository", async () => {
    const github = repositories();
    const token = await minted(github, ["api", "web"]);
    const calls = github.first.calls.length;
    await expect(pushed(github, token, "api, web")).rejects.toThrow(
      new OrchestratorError(
        "the repository variable AGENTRELAY_REPOSITORIES (api,web) leaves out demo, so the app's token cannot act here: add it (demo,api,web)",
      ),
    );
    await expect(pushed(github, token, "octo/api")).rejects.toThrow(
      "the repository variable AGENTRELAY_REPOSITORIES holds 'octo/api': give repository names without their owner, comma-separated (demo,api)",
    );
    expect(github.first.calls.length).toBe(calls);
  });
});

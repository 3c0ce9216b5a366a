/**
 * A graph naming repositories is checked against what the app's credentials reach before anything is
 * written: a repository the installation does not cover is refused at its line under `repositories`,
 * with the fix, on the push's check run (harness/fake-repositories.ts scopes the tokens as GitHub does).
 */
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startApp } from "../../harness/app.ts";
import type { AppConfig } from "../../src/github/client.ts";
import { planCheckOfPull } from "../support/plan-check.ts";
import { API_THEN_CLIENT } from "../support/repositories.ts";

let h: Harness | undefined;
afterEach(() => h?.close());

/** Pushes `graph` to a new harness of `repositories` (undefined: to the harness already started). */
async function pushed(
  repositories: { fullName: string; installation: number | null }[] | undefined,
  graph = API_THEN_CLIENT,
  config: Partial<AppConfig> = {},
) {
  if (repositories) h = await startApp(config, "nock", Infinity, repositories);
  await h!.pushGraph(".workflow/api-client.yaml", graph);
  const check = h!.gh.checkRuns.find((c) => c.name === "agentrelay / .workflow/api-client.yaml")!;
  const annotations = (check?.output?.annotations ?? []) as { start_line: number; message: string }[];
  return { check, lines: annotations.map((a) => `${a.start_line}: ${a.message}`) };
}

/** Nothing was written: no run state, no job, no branch in any repository. */
function nothingWritten(harness: Harness) {
  expect(harness.gh.dispatches).toEqual([]);
  expect([...harness.gh.branches].map(([b]) => b).filter((b) => b.startsWith("agentrelay"))).toEqual([]);
  for (const gh of harness.github.repositories.values())
    if (gh !== harness.gh) expect([...gh.branches].map(([b]) => b)).toEqual(["main"]);
}

describe("access to a graph's repositories, checked at plan time", () => {
  it("refuses a repository the app is not installed on, at its line, with the fix", async () => {
    const { check, lines } = await pushed([
      { fullName: "octo/api", installation: 42 },
      { fullName: "octo/web", installation: null },
    ]);
    expect(check.conclusion).toBe("failure");
    expect(lines).toEqual([
      "4: octo/web: the app is not installed on it: add it to the app's installation (the owner's settings, GitHub Apps, Configure, Repository access), then push the graph again",
    ]);
    nothingWritten(h!);
  });

  it("refuses another account's repository: a run acts through one installation", async () => {
    const graph = API_THEN_CLIENT.replace("api: octo/api", "api: other/api");
    const { lines } = await pushed(
      [
        { fullName: "other/api", installation: 77 },
        { fullName: "octo/web", installation: 42 },
      ],
      graph,
    );
    expect(lines).toEqual([
      "3: other/api: the app's installation on octo cannot reach other's repositories (a run acts through one installation): move the workstream into a repository of octo",
    ]);
    nothingWritten(h!);
  });

  it("says what a workflow's GITHUB_TOKEN cannot do: reach another repository at all", async () => {
    const { lines } = await pushed(
      [
        { fullName: "octo/api", installation: 42 },
        { fullName: "octo/web", installation: 42 },
      ],
      API_THEN_CLIENT,
      { workflow: { token: "github_token" } },
    );
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^3: octo\/api: the workflow's GITHUB_TOKEN reaches octo\/demo only: give the orchestrator a registered GitHub App's token/,
    );
    nothingWritten(h!);
  });

  it("lets a graph whose repositories the installation covers past the check", async () => {
    const { lines } = await pushed([
      { fullName: "octo/api", installation: 42 },
      { fullName: "octo/web", installation: 42 },
    ]);
    expect(lines.join("\n")).not.toMatch(/not installed|cannot reach/);
    // Each was asked about, with the installation's token, before anything was written there.
    for (const name of ["octo/api", "octo/web"])
      expect(h!.github.get(name).calls[0]).toMatchObject({ method: "GET", path: `/repos/${name}` });
    // With the app, the run starts: the API's first job in octo/api, told where the run lives.
    expect(h!.github.get("octo/api").dispatches.map((d) => d.inputs)).toEqual([
      expect.objectContaining({ task: "add-endpoint", attempt: "1", "run-repository": "octo/demo" }),
    ]);
    expect(h!.gh.dispatches).toEqual([]);
  });

  it("refuses a repository whose task workflow is older than the run needs, at its line, with the fix", async () => {
    h = await startApp({}, "nock", Infinity, [
      { fullName: "octo/api", installation: 42 },
      { fullName: "octo/web", installation: 42 },
    ]);
    // octo/web's task workflow, as init wrote it before a workstream could live in another repository.
    const current = readFileSync(
      new URL("../../templates/workflows/agentrelay-task.yml", import.meta.url),
      "utf8",
    );
    const old = current.replace(/ {6}run-repository:\n(?: {8}.*\n)+/, "");
    h.github.get("octo/web").commit("main", { ".github/workflows/agentrelay-task.yml": old });
    h.github.get("octo/api").commit("main", { ".github/workflows/agentrelay-task.yml": current });
    const { check, lines } = await pushed(undefined);
    expect(check.conclusion).toBe("failure");
    expect(lines).toEqual([
      "4: octo/web: its .github/workflows/agentrelay-task.yml is older than this run needs (it does not declare the input run-repository): run `agentrelay init` there and push",
    ]);
    nothingWritten(h!);
  });

  it("starts it in the orchestrator workflow with an app's token, each job told where the run lives and its name to mint a token for", async () => {
    const { lines } = await pushed(
      [
        { fullName: "octo/api", installation: 42 },
        { fullName: "octo/web", installation: 42 },
      ],
      API_THEN_CLIENT,
      { workflow: { token: "app" } },
    );
    expect(lines).toEqual([]);
    expect(h!.github.get("octo/api").dispatches.map((d) => d.inputs)).toEqual([
      expect.objectContaining({
        task: "add-endpoint",
        "run-repository": "octo/demo",
        "run-repository-name": "demo",
        tier: "standard",
      }),
    ]);
    expect(h!.gh.dispatches).toEqual([]);
  });

  it("says the same in a pull request's plan check, before the graph is merged", async () => {
    h = await startApp({}, "nock", Infinity, [
      { fullName: "octo/api", installation: 42 },
      { fullName: "octo/web", installation: null },
    ]);
    const { answer, check } = await planCheckOfPull(h, ".workflow/api-client.yaml", API_THEN_CLIENT);
    expect(answer).toBe(200);
    expect(check?.conclusion).toBe("failure");
    expect(check?.output?.summary).toContain(
      "line 4: `repositories.web`: octo/web: the app is not installed on it",
    );
    nothingWritten(h);
  });
});

import { describe, expect, it } from "vitest";
import { planJson, planText } from "../../src/cli/commands/plan.ts";
import { planSummary } from "../../src/github/render.ts";
import { GraphError } from "../../src/graph/errors.ts";
import { loadGraphFile, parseGraph } from "../../src/graph/load.ts";
import { fixture, yamlFiles } from "../support/fixtures.ts";
import { repositoryFullName } from "../../src/graph/model.ts";
import { mermaidDag } from "../../src/plan/mermaid.ts";
import { overlapsOf } from "../../src/plan/overlaps.ts";
import { buildPlan } from "../../src/plan/plan.ts";
import { parseRunGraph, requireOneRepository } from "../../src/protocol/run-source.ts";
import { API_THEN_CLIENT } from "../support/repositories.ts";

function errorsOf(yaml: string): string[] {
  try {
    parseGraph("case.yaml", yaml);
  } catch (error) {
    if (!(error instanceof GraphError)) throw error;
    return error.issues.map((i) => `${i.line}:${i.column}: ${i.path}: ${i.message}`);
  }
  return [];
}

const TWO = "repositories:\n  api: octo/api\n  web: octo/web\n";
const WS = (...lines: string[]) => `workstreams:\n${lines.join("\n")}\n`;
const TASKS = (...ws: string[]) =>
  `tasks:\n${ws.map((w, i) => `  - id: t${i}\n    description: x\n    workstream_id: ${w}\n`).join("")}`;

describe("graphs that span repositories", () => {
  it("names each workstream's repository; the graph's own is the default", () => {
    const text = API_THEN_CLIENT.replace("    repository: web\n", "").replace("  web: octo/web\n", "");
    const graph = parseGraph("g.yaml", text);
    expect(graph.repositories).toEqual([{ name: "api", fullName: "octo/api" }]);
    expect(graph.workstreams.map((w) => w.repository ?? null)).toEqual(["api", null]);
  });

  it("reads a two-repository graph, canonical or not (values trimmed as every string is)", () => {
    for (const text of [API_THEN_CLIENT, API_THEN_CLIENT.replace("api: octo/api", "api: '  octo/api '")]) {
      const graph = parseGraph("g.yaml", text);
      expect(graph.workstreams.map((w) => [w.id, w.repository])).toEqual([
        ["server", "api"],
        ["client", "web"],
      ]);
      expect(repositoryFullName(graph, "api")).toBe("octo/api");
      expect(repositoryFullName(graph, null)).toBeNull();
    }
  });

  it("leaves graphs without the keys as they were: no repositories, no workstream repository", () => {
    const graph = parseGraph("g.yaml", `name: g\n${WS("  - id: a")}${TASKS("a")}`);
    expect("repositories" in graph).toBe(false);
    expect("repository" in graph.workstreams[0]!).toBe(false);
    // Every real agentrelay graph loads as before: none is given a repository.
    for (const file of yamlFiles("agentrelay", "graphs")) {
      let graph;
      try {
        graph = loadGraphFile(fixture("agentrelay", "graphs", file));
      } catch {
        continue; // the fixtures include graphs that are meant to be refused
      }
      expect("repositories" in graph).toBe(false);
      expect(graph.workstreams.every((w) => !("repository" in w))).toBe(true);
    }
  });

  it.each([
    {
      rule: "a repository is OWNER/NAME",
      yaml: `name: g\nrepositories:\n  api: api\n${WS("  - id: a\n    repository: api")}${TASKS("a")}`,
      errors: [
        "3:8: repositories.api: 'api' is not a GitHub repository: write OWNER/NAME, for example octo/api",
      ],
    },
    {
      rule: "a repository's name is a safe name",
      yaml: `name: g\nrepositories:\n  'my api': octo/api\n${WS("  - id: a\n    repository: my api")}${TASKS("a")}`,
      errors: [
        "3:3: repositories.my api: 'my api' is not a safe repository name: use 1-80 letters, digits, '_', '-' or '.', starting with a letter or digit",
      ],
    },
    {
      rule: "repositories is a mapping",
      yaml: `name: g\nrepositories: [octo/api]\n${TASKS("default")}`,
      errors: ["2:15: repositories: must be a mapping of names to OWNER/NAME repositories"],
    },
    {
      rule: "two names for one repository (GitHub's names ignore case)",
      yaml: `name: g\nrepositories:\n  api: octo/api\n  server: Octo/API\n${WS("  - id: a\n    repository: api", "  - id: b\n    repository: server")}${TASKS("a", "b")}`,
      errors: [
        "4:11: repositories.server: 'server' and 'api' both name Octo/API: give each repository one name and use it in every workstream",
      ],
    },
    {
      rule: "a workstream names a declared repository",
      yaml: `name: g\n${TWO}${WS("  - id: a\n    repository: api", "  - id: b\n    repository: web", "  - id: c\n    repository: wbe")}${TASKS("a", "b", "c")}`,
      errors: [
        "11:17: workstreams[2].repository: unknown repository 'wbe': declare it under repositories (wbe: OWNER/NAME); declared: 'api', 'web'",
      ],
    },
    {
      rule: "a workstream names a repository when none is declared",
      yaml: `name: g\n${WS("  - id: a\n    repository: api")}${TASKS("a")}`,
      errors: [
        "4:17: workstreams[0].repository: unknown repository 'api': declare it under repositories (api: OWNER/NAME)",
      ],
    },
    {
      rule: "a declared repository is used",
      yaml: `name: g\n${TWO}${WS("  - id: a\n    repository: api")}${TASKS("a")}`,
      errors: [
        "4:3: repositories.web: repository 'web' is used by no workstream: set 'repository: web' on one, or remove it",
      ],
    },
    {
      rule: "a child workstream is in its parent's repository",
      yaml: `name: g\n${TWO}${WS("  - id: a\n    repository: api", "  - id: b\n    repository: web\n    parent_workstream_id: a")}${TASKS("a", "b")}`,
      errors: [
        "9:17: workstreams[1].repository: workstream 'b' is in repository 'web' but its parent 'a' is in repository 'api': a child workstream lands on its parent's integration branch, so give it the parent's repository, or make it a workstream of its own that depends on the parent's tasks",
      ],
    },
    {
      rule: "a child without a repository under a parent with one",
      yaml: `name: g\nrepositories:\n  api: octo/api\n${WS("  - id: a\n    repository: api", "  - id: b\n    parent_workstream_id: a")}${TASKS("a", "b")}`,
      errors: [
        "8:27: workstreams[1].parent_workstream_id: workstream 'b' is in the graph's own repository but its parent 'a' is in repository 'api': a child workstream lands on its parent's integration branch, so give it the parent's repository, or make it a workstream of its own that depends on the parent's tasks",
      ],
    },
    {
      rule: "inputs_from stays in one repository",
      yaml: API_THEN_CLIENT.replace(
        "    dependencies: [add-endpoint]\n",
        "    dependencies: [add-endpoint]\n    inputs_from: [{ task: add-endpoint }]\n",
      ),
      errors: [
        "20:27: tasks[1].inputs_from[0].task: task 'add-endpoint' is in repository 'api' and 'use-endpoint' in repository 'web': inputs_from reads files of a task in the same repository; across repositories, depend on the task and read what landed (landed.json)",
      ],
    },
    {
      rule: "dependencies may cross repositories",
      yaml: API_THEN_CLIENT,
      errors: [],
    },
  ])("$rule", ({ yaml, errors }) => {
    expect(errorsOf(yaml)).toEqual(errors);
  });

  it("never counts tasks of two repositories as overlaps; tasks of one still are", () => {
    const parallel = API_THEN_CLIENT.replace("    dependencies: [add-endpoint]\n", "");
    expect(overlapsOf(buildPlan(parseGraph("g.yaml", parallel)))).toEqual([]);
    const oneRepository = parallel
      .replace("    repository: web\n", "    repository: api\n")
      .replace("  web: octo/web\n", "");
    expect(overlapsOf(buildPlan(parseGraph("g.yaml", oneRepository))).map((o) => o.tasks)).toEqual([
      ["add-endpoint", "use-endpoint"],
    ]);
  });

  it("the plan names each workstream's repository, as text, JSON and the plan comment", () => {
    const plan = buildPlan(parseGraph("g.yaml", API_THEN_CLIENT));
    const text = planText(plan);
    expect(text).toContain(
      "  server: in octo/api (api): agentrelay/api-client/server/integration from main into main",
    );
    expect(text).toContain("  client: in octo/web (web): agentrelay/api-client/client/integration");
    expect(mermaidDag(plan)).toContain('subgraph workstream_0["server · octo/api"]');
    expect(planJson(plan)).toMatchObject({
      workstreams: [
        { id: "server", repository: { name: "api", full_name: "octo/api" } },
        { id: "client", repository: { name: "web", full_name: "octo/web" } },
      ],
    });
    const comment = planSummary(plan);
    expect(comment).toContain("| Workstream | Repository | From |");
    expect(comment).toContain("| `server` | `octo/api` | `main` |");
    expect(comment).toContain("integration branch, `agentrelay/api-client/<workstream>/integration`.");
    // A graph in one repository keeps its table as it was.
    const single = planSummary(buildPlan(parseGraph("g.yaml", `name: g\n${WS("  - id: a")}${TASKS("a")}`)));
    expect(single).toContain("| Workstream | From | Into |");
  });

  it("runs with an app's token (hosted, or the orchestrator workflow's), and is refused with GITHUB_TOKEN alone at its repositories key, with the fix", () => {
    const source = { path: ".workflow/api-client.yaml", text: API_THEN_CLIENT };
    expect(() => requireOneRepository(parseRunGraph(source), source, "app")).not.toThrow();
    expect(() => requireOneRepository(parseRunGraph(source), source, "github_token")).toThrow(
      ".workflow/api-client.yaml:2:1: repositories: graphs that span repositories (octo/api, octo/web) need a token that reaches each, and the workflow's GITHUB_TOKEN reaches this repository only: give the orchestrator workflow a registered GitHub App's token (the variable AGENTRELAY_APP_CLIENT_ID, the secret AGENTRELAY_APP_PRIVATE_KEY and AGENTRELAY_REPOSITORIES, in each repository: docs/github.md), use the agentrelay app, or run it locally (agentrelay run .workflow/api-client.yaml --repo DIR --repo NAME=PATH)",
    );
    const single = `name: g\n${WS("  - id: a")}${TASKS("a")}`;
    const one = { path: "g.yaml", text: single };
    expect(() => requireOneRepository(parseRunGraph(one), one, "github_token")).not.toThrow();
  });
});

/**
 * Graphs that span repositories on the stand-in: it holds several repositories, the app installed on
 * some of them, and answers each with the installation's token as GitHub does.
 */
import { afterEach, describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { e2eAgent } from "../../harness/e2e-agent.ts";
import { promptOf, type Script } from "../../src/scripted/model-server.ts";
import { repository } from "../../harness/app.ts";
import { type Standin, startStandin } from "../../harness/standin.ts";
import type { GitHubClient } from "../../src/github/client.ts";
import { API_THEN_CLIENT, FAN_IN } from "../support/repositories.ts";

let standin: Standin | undefined;
afterEach(async () => {
  await standin?.close();
  standin = undefined;
});

describe("the stand-in of several repositories", () => {
  it("serves each repository from its own git repository, to the installations that cover it", async () => {
    const s = await startStandin({
      script: e2eAgent(),
      jobs: "scripted",
      repositories: [
        { fullName: "octo/api", installation: 42 },
        { fullName: "octo/client", installation: null },
      ],
    });
    standin = s;
    s.github.get("octo/api").commit("main", { "openapi.yaml": "paths: {}\n" });
    const octokit = (await s.replicas.list[0]!.probot.auth(42)) as unknown as GitHubClient;
    const api = await octokit.rest.repos.getContent({ owner: "octo", repo: "api", path: "openapi.yaml" });
    expect(api.status).toBe(200);
    await expect(octokit.rest.repos.get({ owner: "octo", repo: "client" })).rejects.toMatchObject({
      status: 404,
    });
    // The graph's repository is not the others': its main has no openapi.yaml.
    expect(s.gh.file("main", "openapi.yaml")).toBeUndefined();
    expect(s.github.get("octo/api").store.files("main")["openapi.yaml"]).toBe("paths: {}\n");
  });
});

/** Each PR of a repository, as `head -> base merged|open|closed`. */
const pullsOf = (s: Standin, fullName: string) =>
  s.github.get(fullName).pulls.map((p) => `${p.head} -> ${p.base} ${p.merged ? "merged" : p.state}`);

/** The stand-in with scripted jobs and the app installed on `octo/api` and `octo/web` besides the graph's own. */
const apiAndWebStandin = (options: Pick<Parameters<typeof startStandin>[0], "hold"> = {}) =>
  startStandin({
    script: e2eAgent(),
    jobs: "scripted",
    memory: true,
    repositories: [
      { fullName: "octo/api", installation: 42 },
      { fullName: "octo/web", installation: 42 },
    ],
    ...options,
  });

describe("a graph that spans repositories, run by the app on the stand-in", () => {
  it("runs an API change, then its client in another repository, each landing in its own, in order", async () => {
    let asks: Promise<{ status: number; error: string }[]> | null = null;
    const s = await apiAndWebStandin({
      // While add-endpoint's own job (in octo/api) runs, genuine jobs of other repositories ask for it.
      hold: async ({ task }) => {
        if (task === "add-endpoint") await (asks ??= askAsOthers(standin!));
      },
    });
    standin = s;
    await s.push({ ".workflow/api-client.yaml": API_THEN_CLIENT });
    await s.idle();
    expect(s.outcome("api-client/1")).toBe("succeeded");
    // A job in another repository than the task's workstream gets no token and no work, wherever
    // it says the run lives; the real job went on.
    expect(await asks).toEqual([
      {
        status: 403,
        error: "add-endpoint of run api-client/1 works in octo/api: a job in octo/web may not take it",
      },
      {
        status: 403,
        error: "add-endpoint of run api-client/1 works in octo/api: a job in octo/demo may not take it",
      },
    ]);
    const [api, web] = [s.github.get("octo/api"), s.github.get("octo/web")];

    // Each job ran in its workstream's repository and landed there, the API's first.
    expect(api.dispatches.map((d) => d.inputs.task)).toEqual(["add-endpoint"]);
    expect(web.dispatches.map((d) => d.inputs.task)).toEqual(["use-endpoint"]);
    expect(s.gh.dispatches).toEqual([]);
    expect(pullsOf(s, "octo/api")).toEqual([
      "agentrelay/api-client/add-endpoint -> agentrelay/api-client/server/integration merged",
      "agentrelay/api-client/server/integration -> main merged",
    ]);
    expect(pullsOf(s, "octo/web")).toEqual([
      "agentrelay/api-client/use-endpoint -> agentrelay/api-client/client/integration merged",
      "agentrelay/api-client/client/integration -> main merged",
    ]);
    expect(s.gh.pulls).toEqual([]);
    expect(web.dispatches[0]!.at).toBeGreaterThanOrEqual(api.history.at(-1)!.at);
    expect(api.file("main", "notes/add-endpoint.md")).toBe("task add-endpoint, attempt 1\n");

    // The client's job read the run in octo/demo with its read-only token, and was told what landed.
    const apiMain = api.branch("main");
    const apiPr = api.pulls[1]!.number;
    expect(web.file("main", "notes/use-endpoint.md")).toBe(
      "task use-endpoint, attempt 1\n" +
        `landed: server octo/api ${apiMain} https://github.com/octo/api/pull/${apiPr}: did add-endpoint\n`,
    );
    // Its tokens: its own repository with the task's tier, and the run's to read only.
    const demoTokens = s.gh.tokens.filter((t) => t.repositories.join() === "demo");
    expect(
      demoTokens.filter((t) => t.permissions.contents === "read" && !t.permissions.pull_requests),
    ).toHaveLength(2);
    expect(
      web.tokens.some((t) => t.repositories.join() === "web" && t.permissions.contents === "write"),
    ).toBe(true);

    // The status comment, in the graph's repository, names each PR's repository and links each job
    // where it ran; each task PR links back to the run's issue there.
    const status = s.gh.comments.find((c) => c.body.includes("agentrelay:status"))!.body;
    for (const [repo, gh] of [
      ["octo/api", api],
      ["octo/web", web],
    ] as const) {
      const [taskPr] = gh.pulls;
      expect(status).toContain(
        `[octo/${gh.repo}#${taskPr!.number}](https://github.com/${repo}/pull/${taskPr!.number})`,
      );
      expect(status).toContain(`(https://github.com/${repo}/actions/runs/${gh.dispatches[0]!.runId})`);
      expect(taskPr!.body).toContain("of run [`api-client/1`](https://github.com/octo/demo/issues/1)");
    }
  });

  it("runs two workstreams in parallel in two repositories and a fan-in in a third", async () => {
    const s = await startStandin({
      script: e2eAgent(),
      jobs: "scripted",
      memory: true,
      repositories: ["octo/api", "octo/worker", "octo/web"].map((fullName) => ({
        fullName,
        installation: 42,
      })),
    });
    standin = s;
    await s.push({ ".workflow/fan-in.yaml": FAN_IN });
    await s.idle();
    expect(s.outcome("fan-in/1")).toBe("succeeded");
    for (const [repo, ws] of [
      ["octo/api", "server"],
      ["octo/worker", "jobs"],
      ["octo/web", "client"],
    ])
      expect(pullsOf(s, repo!).at(-1)).toBe(`agentrelay/fan-in/${ws}/integration -> main merged`);
    // The fan-in started once both had landed, and was told of both.
    const [api, worker, web] = ["octo/api", "octo/worker", "octo/web"].map((r) => s.github.get(r));
    expect(web!.dispatches[0]!.at).toBeGreaterThanOrEqual(
      Math.max(api!.history.at(-1)!.at, worker!.history.at(-1)!.at),
    );
    const told = web!
      .file("main", "notes/use-both.md")!
      .split("\n")
      .filter((l) => l.startsWith("landed:"));
    expect(told.map((l) => l.split(" ").slice(1, 3).join(" "))).toEqual([
      "jobs octo/worker",
      "server octo/api",
    ]);
  });
});

describe("events from a workstream's repository", () => {
  it("reach the run in the graph's repository: a person merging the API's integration PR starts the client", async () => {
    const s = await apiAndWebStandin();
    standin = s;
    const graph = API_THEN_CLIENT.replace(
      "repository: api\n    auto_merge: true",
      "repository: api\n    auto_merge: false",
    );
    await s.push({ ".workflow/api-client.yaml": graph });
    await s.idle();
    const [api, web] = [s.github.get("octo/api"), s.github.get("octo/web")];
    const pr = api.pulls.find((p) => p.base === "main")!;
    expect(pr.state).toBe("open");
    expect(pr.body).toContain("of run [`api-client/1`](https://github.com/octo/demo/issues/1)");
    const closed = (number: number, body: string) =>
      s.webhook("pull_request", {
        action: "closed",
        number,
        pull_request: {
          number,
          html_url: `https://github.com/octo/api/pull/${number}`,
          merged: true,
          body,
          head: { ref: pr.head, sha: api.branch(pr.head), repo: { full_name: "octo/api" } },
          base: { ref: "main" },
        },
        repository: repository(api),
        installation: { id: 42 },
      });
    // A PR that borrows the branch's name and the run's link is not the run's: nothing happens.
    await closed(pr.number + 100, pr.body);
    await s.idle();
    expect(web.dispatches).toEqual([]);
    // A person merges the integration PR on GitHub: the run in octo/demo hears it and goes on.
    api.mergeInto("main", pr.head, `Merge pull request #${pr.number}`);
    Object.assign(pr, { merged: true, state: "closed" });
    await closed(pr.number, pr.body);
    await s.idle();
    expect(web.dispatches.map((d) => d.inputs.task)).toEqual(["use-endpoint"]);
    expect(s.outcome("api-client/1")).toBe("succeeded");
  });
});

describe("the bundled Action in a workstream's repository", () => {
  it("finds its run in the graph's repository, pushes to its own, and its agent is told what landed", async () => {
    // What each agent found in its work directory's landed.json (the job wrote it from the run it read).
    const told = new Map<string, unknown>();
    const agent = e2eAgent();
    const script: Script = (request) => {
      const instructions = /Read (\S+instructions\.md)/.exec(promptOf(request))?.[1];
      const landed = instructions ? join(dirname(instructions), "landed.json") : "";
      if (landed && existsSync(landed))
        told.set(instructions!, JSON.parse(readFileSync(landed, "utf8")) as unknown);
      return agent(request);
    };
    const s = await startStandin({
      script,
      repositories: [
        { fullName: "octo/api", installation: 42 },
        { fullName: "octo/web", installation: 42 },
      ],
    });
    standin = s;
    await s.push({ ".workflow/api-client.yaml": API_THEN_CLIENT });
    await s.idle();
    expect(s.outcome("api-client/1")).toBe("succeeded");
    const [api, web] = [s.github.get("octo/api"), s.github.get("octo/web")];
    expect(api.file("main", "notes/add-endpoint.md")).toBe("task add-endpoint, attempt 1\n");
    expect(web.file("main", "notes/use-endpoint.md")).toBe("task use-endpoint, attempt 1\n");
    expect(s.gh.file("main", "notes/add-endpoint.md")).toBeUndefined();
    expect([...told.values()]).toEqual([
      expect.objectContaining({
        landed: [
          expect.objectContaining({
            workstream: "server",
            repository: "octo/api",
            commit: api.branch("main"),
            pull_request: expect.objectContaining({
              url: `https://github.com/octo/api/pull/${api.pulls[1]!.number}`,
            }),
            tasks: [{ id: "add-endpoint", summary_by_another_agent: "Wrote notes/add-endpoint.md." }],
          }),
        ],
      }),
    ]);
  });
});

/**
 * Jobs of the task workflow in octo/web and in octo/demo (genuine ones: GitHub's OIDC tokens say so)
 * asking for attempt 1 of add-endpoint, whose workstream is in octo/api.
 */
async function askAsOthers(s: Standin): Promise<{ status: number; error: string }[]> {
  const asks = [
    { repository: "octo/web", body: { repository: "octo/demo" } },
    { repository: "octo/demo", body: {} },
  ];
  return Promise.all(
    asks.map(async ({ repository, body }) => {
      const oidc = await fetch(`${s.url}/oidc/token?job=99&audience=agentrelay&repository=${repository}`);
      const { value } = (await oidc.json()) as { value: string };
      const answer = await fetch(`${s.url}/agentrelay/token`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${value}` },
        body: JSON.stringify({ run: "api-client/1", task: "add-endpoint", attempt: 1, ...body }),
      });
      return { status: answer.status, error: String(((await answer.json()) as { error?: string }).error) };
    }),
  );
}

/**
 * Workflow mode (no app server) with a registered app's token, for a graph that spans repositories,
 * on the stand-in: octo/demo holds the graph and its run, octo/api and octo/web each a workstream;
 * each repository has the no-app workflows and the app's credentials, and runs its own orchestrator
 * for its own events (standin-workflow-repositories.ts). Scripted jobs: what is shown is the
 * orchestrators' and the tokens' part.
 */
import { afterEach, describe, expect, it } from "vitest";
import { repository } from "../../harness/app.ts";
import { e2eAgent } from "../../harness/e2e-agent.ts";
import { type Standin, type StandinOptions, startStandin } from "../../harness/standin.ts";
import { API_THEN_CLIENT } from "../support/repositories.ts";

let standin: Standin | undefined;
afterEach(async () => {
  await standin?.close();
  standin = undefined;
});

/** Each PR of a repository, as `head -> base merged|open|closed`. */
const pullsOf = (s: Standin, fullName: string) =>
  s.github.get(fullName).pulls.map((p) => `${p.head} -> ${p.base} ${p.merged ? "merged" : p.state}`);

/** Workflow mode with the app's token on the stand-in, the graph's repository and `others` in one installation. */
const workflowStandin = (others: string[], options: Partial<StandinOptions> = {}) =>
  startStandin({
    script: e2eAgent(),
    orchestrator: "workflow",
    token: "app",
    jobs: "scripted",
    memory: true,
    repositories: others.map((fullName) => ({ fullName, installation: 42 })),
    ...options,
  });

describe("workflow mode with a registered app's token, across repositories, on the stand-in", () => {
  it("runs an API change, then its client in another repository, each landing in its own, in order; a job of octo/web for the API's task changes nothing", async () => {
    let forged: Promise<void> | null = null;
    const s = await workflowStandin(["octo/api", "octo/web"], {
      // While add-endpoint's own job (in octo/api) runs, a writer of octo/web runs the task workflow
      // there for add-endpoint, its report well formed, bound with the shared report secret.
      hold: async ({ task }) => {
        if (task !== "add-endpoint" || forged) return;
        forged = forgeInWeb(standin!);
        await forged;
      },
    });
    standin = s;
    await s.push({ ".workflow/api-client.yaml": API_THEN_CLIENT });
    await s.idle();
    expect(s.outcome("api-client/1")).toBe("succeeded");
    const [api, web] = [s.github.get("octo/api"), s.github.get("octo/web")];
    const logs = s.workflowRepositories!.logs;
    expect(logs.filter((l) => l.code !== 0)).toEqual([]);

    // Each job ran in its workstream's repository and landed there, the API's first.
    expect(api.dispatches.map((d) => d.inputs.task)).toEqual(["add-endpoint"]);
    // (octo/web's first run is the one its writer dispatched for add-endpoint.)
    expect(web.dispatches.map((d) => d.inputs.task)).toEqual(["add-endpoint", "use-endpoint"]);
    expect(s.gh.dispatches).toEqual([]);
    expect(pullsOf(s, "octo/api")).toEqual([
      "agentrelay/api-client/add-endpoint -> agentrelay/api-client/server/integration merged",
      "agentrelay/api-client/server/integration -> main merged",
    ]);
    expect(pullsOf(s, "octo/web")).toEqual([
      "agentrelay/api-client/use-endpoint -> agentrelay/api-client/client/integration merged",
      "agentrelay/api-client/client/integration -> main merged",
    ]);
    expect(web.dispatches[1]!.at).toBeGreaterThanOrEqual(api.history.at(-1)!.at);
    expect(web.dispatches[1]!.inputs).toMatchObject({
      "run-repository": "octo/demo",
      "run-repository-name": "demo",
      tier: "standard",
    });

    // The client's job read the run in octo/demo with the token minted for it alone, to read, and
    // was told what landed in octo/api.
    const apiPr = api.pulls[1]!.number;
    expect(web.file("main", "notes/use-endpoint.md")).toBe(
      "task use-endpoint, attempt 1\n" +
        `landed: server octo/api ${api.branch("main")} https://github.com/octo/api/pull/${apiPr}: did add-endpoint\n`,
    );
    expect(s.gh.tokens).toContainEqual({ permissions: { contents: "read" }, repositories: ["demo"] });

    // Each job handed over to its own repository's orchestrator, which handed over to the graph's
    // (where every change to the run is made, in one queue); nothing failed anywhere.
    expect(s.taskJobs.handOvers.map((h) => h.status)).toEqual([204, 204, 204]);
    expect(
      logs.filter((l) => l.repository === "octo/demo" && l.event === "workflow_dispatch").length,
    ).toBeGreaterThan(0);
    const handedOver = (repository: string, task: string) =>
      logs.some(
        (l) =>
          l.repository === repository &&
          l.log.includes(
            `${task} of api-client/1 works here; its run lives in octo/demo: handed over to its orchestrator`,
          ),
      );
    expect(handedOver("octo/api", "add-endpoint")).toBe(true);
    expect(handedOver("octo/web", "use-endpoint")).toBe(true);

    // The job octo/web ran for add-endpoint was no attempt of it: octo/web's orchestrator left the run
    // alone, and the graph's reconciler looked for the attempt's job in octo/api only.
    await forged;
    expect(handedOver("octo/web", "add-endpoint")).toBe(false);
    const endpoint = s.gh.state("api-client/1").tasks["add-endpoint"] as unknown as {
      attempts: { job: string }[];
    };
    expect(endpoint.attempts).toHaveLength(1);
    expect(endpoint.attempts[0]!.job).toBe(String(api.dispatches[0]!.runId));
    expect(web.pulls.some((p) => p.head.endsWith("/add-endpoint"))).toBe(false);
  });

  it("a person merging the API's integration PR in octo/api starts octo/api's orchestrator, which hands it over to octo/demo's", async () => {
    const s = await workflowStandin(["octo/api", "octo/web"]);
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
    expect(web.dispatches).toEqual([]);
    api.mergeInto("main", pr.head, `Merge pull request #${pr.number}`);
    Object.assign(pr, { merged: true, state: "closed" });
    await s.webhook("pull_request", {
      action: "closed",
      number: pr.number,
      pull_request: {
        number: pr.number,
        html_url: `https://github.com/octo/api/pull/${pr.number}`,
        merged: true,
        body: pr.body,
        head: { ref: pr.head, sha: api.branch(pr.head), repo: { full_name: "octo/api" } },
        base: { ref: "main" },
      },
      repository: repository(api),
      installation: { id: 42 },
    });
    await s.idle();
    // GitHub started octo/api's orchestrator for it (no other's), which handed it over to the run's
    // own orchestrator (the one queue that changes the run); the client went on.
    const logs = s.workflowRepositories!.logs;
    expect(logs.filter((l) => l.event === "pull_request").map((l) => [l.repository, l.log])).toEqual([
      ["octo/api", "pull_request.closed: handling\nhanded over to the orchestrator of octo/demo"],
    ]);
    expect(web.dispatches.map((d) => d.inputs.task)).toEqual(["use-endpoint"]);
    expect(s.outcome("api-client/1")).toBe("succeeded");
  });

  it("holds each workflow's GITHUB_TOKEN to its repository, and the job's run token to reading the run's", async () => {
    const s = await workflowStandin(["octo/web"]);
    standin = s;
    const web = s.github.get("octo/web");
    const repos = s.workflowRepositories!;
    const ask = (method: string, path: string, token: string, body?: object) =>
      s.github.serve(method, path, body, "", `token ${token}`).then(([status]) => status);
    expect(await ask("GET", "/repos/octo/web", repos.workflowToken(web))).toBe(200);
    expect(await ask("GET", "/repos/octo/demo", repos.workflowToken(web))).toBe(404);
    const runToken = repos.runToken(web, "octo/demo");
    expect(await ask("GET", "/repos/octo/demo/git/ref/heads/main", runToken)).toBe(200);
    expect(await ask("GET", "/repos/octo/web", runToken)).toBe(404);
    const ref = { ref: "refs/heads/x", sha: s.gh.branches.get("main")! };
    expect(await ask("POST", "/repos/octo/demo/git/refs", runToken, ref)).toBe(403);
  });
});

/**
 * A writer of octo/web dispatches its task workflow for add-endpoint (whose workstream lives in
 * octo/api), naming the run in octo/demo; resolves once octo/web's orchestrator handled its hand-over.
 */
async function forgeInWeb(s: Standin): Promise<void> {
  const web = s.github.get("octo/web");
  const real = s.github.get("octo/api").dispatches[0]!.inputs;
  const response = await s.github.fetch(
    "https://api.github.com/repos/octo/web/actions/workflows/agentrelay-task.yml/dispatches",
    {
      method: "POST",
      headers: { authorization: `token ${s.workflowRepositories!.workflowToken(web)}` },
      body: JSON.stringify({ ref: "main", inputs: { ...real, "run-repository-name": "demo" } }),
    },
  );
  expect(response.status).toBe(204);
  await s.until(() =>
    s.workflowRepositories!.logs.some((l) => l.repository === "octo/web" && l.event === "workflow_dispatch"),
  );
}

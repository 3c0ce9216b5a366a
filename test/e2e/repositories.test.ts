/**
 * Graphs that span repositories on the stand-in: it holds several repositories, the app installed on
 * some of them, and answers each with the installation's token as GitHub does.
 */
import { afterEach, describe, expect, it } from "vitest";
import { e2eAgent } from "../../harness/e2e-agent.ts";
import { type Standin, startStandin } from "../../harness/standin.ts";
import type { GitHubClient } from "../../src/github/client.ts";

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

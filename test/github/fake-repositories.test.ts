/**
 * The fake GitHub of several repositories: the app installed on some and not others, installation
 * tokens scoped to their repositories and permissions as GitHub scopes them (the sources are cited in
 * harness/fake-repositories.ts), and each repository's requests answered by its own fake.
 */
import { describe, expect, it } from "vitest";
import { FakeRepositories } from "../../harness/fake-repositories.ts";

const auth = (token: string) => `token ${token}`;

/** octo/demo (the graph's) and octo/api on installation 42, octo/client on none, other/lib on 77. */
function world() {
  const repos = new FakeRepositories();
  const api = repos.add("octo/api", 42);
  const client = repos.add("octo/client", null);
  const lib = repos.add("other/lib", 77);
  return { repos, demo: repos.first, api, client, lib };
}

async function mint(repos: FakeRepositories, installation: number, body: object = {}) {
  const [status, data] = await repos.serve("POST", `/app/installations/${installation}/access_tokens`, body);
  return { status, ...(data as { token: string; message?: string }) };
}

describe("a fake GitHub of several repositories", () => {
  it("says where the app is installed: 404 for a repository no installation covers", async () => {
    const { repos } = world();
    expect(await repos.serve("GET", "/repos/octo/api/installation", undefined)).toEqual([
      200,
      { id: 42, account: { login: "octo" } },
    ]);
    expect((await repos.serve("GET", "/repos/Octo/API/installation", undefined))[0]).toBe(200);
    expect((await repos.serve("GET", "/repos/octo/client/installation", undefined))[0]).toBe(404);
    expect((await repos.serve("GET", "/repos/other/lib/installation", undefined))[1]).toMatchObject({
      id: 77,
    });
    const [, installations] = await repos.serve("GET", "/app/installations", undefined);
    expect(installations).toEqual([
      { id: 42, account: { login: "octo" } },
      { id: 77, account: { login: "other" } },
    ]);
  });

  it("scopes a token to its installation's repositories, or to those it names", async () => {
    const { repos, api } = world();
    api.commit("main", { "openapi.yaml": "v2\n" });
    const whole = await mint(repos, 42);
    expect(whole.status).toBe(201);
    for (const path of ["/repos/octo/demo", "/repos/octo/api/contents/openapi.yaml"])
      expect((await repos.serve("GET", path, undefined, "", auth(whole.token)))[0]).toBe(200);
    // Not installed there, or another account's installation: GitHub says Not Found.
    for (const path of ["/repos/octo/client", "/repos/other/lib"])
      expect(await repos.serve("GET", path, undefined, "", auth(whole.token))).toEqual([
        404,
        { message: "Not Found" },
      ]);
    const narrow = await mint(repos, 42, { repositories: ["demo"] });
    expect((await repos.serve("GET", "/repos/octo/api", undefined, "", auth(narrow.token)))[0]).toBe(404);
    const [, listed] = await repos.serve(
      "GET",
      "/installation/repositories",
      undefined,
      "",
      auth(narrow.token),
    );
    expect(
      (listed as { repositories: { full_name: string }[] }).repositories.map((r) => r.full_name),
    ).toEqual(["octo/demo"]);
  });

  it("refuses a token for a repository or a permission the installation was not granted", async () => {
    const { repos } = world();
    expect(await mint(repos, 42, { repositories: ["client"] })).toMatchObject({
      status: 422,
      message:
        "There is at least one repository that does not exist or is not accessible to the parent installation.",
    });
    // Names, not full names, as the API takes them.
    expect((await mint(repos, 42, { repositories: ["octo/api"] })).status).toBe(422);
    expect((await mint(repos, 42, { permissions: { administration: "write" } })).status).toBe(422);
    expect((await mint(repos, 99)).status).toBe(404);
  });

  it("answers 403 for what a token's permissions do not cover", async () => {
    const { repos, api } = world();
    api.commit("main", { "a.txt": "a\n" });
    const reader = await mint(repos, 42, { repositories: ["api"], permissions: { contents: "read" } });
    const as = auth(reader.token);
    expect((await repos.serve("GET", "/repos/octo/api/contents/a.txt", undefined, "", as))[0]).toBe(200);
    expect(
      await repos.serve(
        "POST",
        "/repos/octo/api/git/refs",
        { ref: "refs/heads/x", sha: api.branch("main") },
        "",
        as,
      ),
    ).toEqual([403, { message: "Resource not accessible by integration" }]);
    expect((await repos.serve("POST", "/repos/octo/api/issues", { title: "t" }, "", as))[0]).toBe(403);
    expect(api.branches.has("x")).toBe(false);
  });

  it("takes a repository away from tokens already minted when it leaves the installation", async () => {
    const { repos } = world();
    const { token } = await mint(repos, 42);
    expect((await repos.serve("GET", "/repos/octo/api", undefined, "", auth(token)))[0]).toBe(200);
    repos.uninstall("octo/api");
    expect((await repos.serve("GET", "/repos/octo/api", undefined, "", auth(token)))[0]).toBe(404);
    expect((await repos.serve("GET", "/repos/octo/api/installation", undefined))[0]).toBe(404);
    // Installed again: the same token reaches it once more (GitHub checks access on each request).
    repos.install(42, "octo", ["octo/api"]);
    expect((await repos.serve("GET", "/repos/octo/api", undefined, "", auth(token)))[0]).toBe(200);
  });

  it("answers each repository's requests from its own branches, GraphQL included", async () => {
    const { repos, demo, api } = world();
    api.commit("main", { "api.txt": "api\n" });
    const read = async (repo: string) =>
      (
        await repos.serve("POST", "/graphql", {
          query:
            "query($owner: String!, $name: String!, $ref: String!) { repository(owner: $owner, name: $name) { ref(qualifiedName: $ref) { target { ... on Commit { tree { entries { name } } } } } } }",
          variables: { owner: "octo", name: repo, ref: "refs/heads/main" },
        })
      )[1];
    expect(JSON.stringify(await read("api"))).toContain("api.txt");
    expect(JSON.stringify(await read("demo"))).not.toContain("api.txt");
    expect(api.log(/GET/)).toEqual([]);
    expect(demo.calls.length).toBe(1);
    expect(api.calls.length).toBe(1);
  });

  it("gives workflow runs ids no other repository's runs have, as GitHub's are global", async () => {
    const { repos, demo, api } = world();
    const token = (await mint(repos, 42)).token;
    const dispatch = async (repo: string) =>
      (
        await repos.serve(
          "POST",
          `/repos/octo/${repo}/actions/workflows/agentrelay-task.yml/dispatches`,
          { ref: "main", inputs: { run: "g/1", task: "t", attempt: "1" }, return_run_details: true },
          "",
          auth(token),
        )
      )[1] as { workflow_run_id: number };
    const ids = [await dispatch("demo"), await dispatch("api"), await dispatch("demo")].map(
      (d) => d.workflow_run_id,
    );
    expect(new Set(ids).size).toBe(3);
    expect([...demo.workflowRuns.keys()]).toEqual([ids[0], ids[2]]);
    expect([...api.workflowRuns.keys()]).toEqual([ids[1]]);
    // A run is found in its repository only.
    const get = (repo: string, id: number) =>
      repos.serve("GET", `/repos/octo/${repo}/actions/runs/${id}`, undefined, "", auth(token));
    expect((await get("api", ids[1]!))[0]).toBe(200);
    expect((await get("demo", ids[1]!))[0]).toBe(404);
  });
});

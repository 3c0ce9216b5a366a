/** Graphs that span repositories, for the graph, local and GitHub tests. */
import { Octokit } from "@octokit/rest";
import nock from "nock";
import { FakeRepositories } from "../../harness/fake-repositories.ts";
import { DEFAULT_CONFIG, type GitHubClient, type RepoContext } from "../../src/github/client.ts";

/**
 * A fake GitHub holding the graph's repository (octo/demo) and `others` (`OWNER/NAME` and its
 * installation, null for none), answering every request in place of the network.
 */
export function mountedRepositories(others: [string, number | null][]): FakeRepositories {
  nock.disableNetConnect();
  const github = new FakeRepositories();
  for (const [fullName, installation] of others) github.add(fullName, installation);
  github.mount();
  return github;
}

/** The app's context in the graph's repository (octo/demo), acting with a token of installation 42. */
export async function installationContext(github: FakeRepositories): Promise<RepoContext> {
  const [, minted] = await github.serve("POST", "/app/installations/42/access_tokens", {});
  const octokit = new Octokit({
    auth: (minted as { token: string }).token,
    request: { fetch: globalThis.fetch, retries: 0 },
    log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
  }) as unknown as GitHubClient;
  return {
    octokit,
    owner: "octo",
    repo: "demo",
    defaultBranch: "main",
    config: { ...DEFAULT_CONFIG, statusIntervalMs: 0 },
    now: Date.now,
    log: () => {},
  };
}

/** An API change, then a client that uses it: the client's workstream depends on the API's. */
export const API_THEN_CLIENT = `name: api-client
repositories:
  api: octo/api
  web: octo/web
workstreams:
  - id: server
    repository: api
    auto_merge: true
  - id: client
    repository: web
    auto_merge: true
tasks:
  - id: add-endpoint
    workstream_id: server
    description: Add GET /v2/items to src/server.ts
    tagged_paths: [{ path: src/items.ts, category: src }]
  - id: use-endpoint
    workstream_id: client
    dependencies: [add-endpoint]
    description: Call GET /v2/items from src/client.ts
    tagged_paths: [{ path: src/items.ts, category: src }]
`;

/** Two workstreams in parallel in two repositories, and a fan-in in a third that depends on both. */
export const FAN_IN = `name: fan-in
repositories:
  api: octo/api
  worker: octo/worker
  web: octo/web
workstreams:
  - id: server
    repository: api
    auto_merge: true
  - id: jobs
    repository: worker
    auto_merge: true
  - id: client
    repository: web
    auto_merge: true
tasks:
  - id: add-endpoint
    workstream_id: server
    description: Add GET /v2/items
  - id: add-job
    workstream_id: jobs
    description: Add the items job
  - id: use-both
    workstream_id: client
    dependencies: [add-endpoint, add-job]
    description: Show items and their job's status
`;

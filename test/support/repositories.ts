/** Graphs that span repositories, for the graph, local and GitHub tests. */

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

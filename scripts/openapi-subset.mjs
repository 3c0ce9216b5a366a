// Extracts, from GitHub's OpenAPI description (npm @octokit/openapi, 385 MB installed, so not a
// dependency), the operations the app and the Action call: their paths, parameters and request-body
// schemas. Tests check every request the fake GitHub receives against this committed subset.
//   npm install --prefix /tmp/oas @octokit/openapi
//   node scripts/openapi-subset.mjs /tmp/oas/node_modules/@octokit/openapi/generated/api.github.com.deref.json
import { readFileSync, writeFileSync } from "node:fs";

const OPERATIONS = [
  "POST /app/installations/{installation_id}/access_tokens",
  "GET /app",
  "GET /app/installations",
  "GET /installation/repositories",
  "GET /repos/{owner}/{repo}/installation",
  "GET /repos/{owner}/{repo}/contents/{path}",
  "GET /repos/{owner}/{repo}/branches/{branch}",
  "GET /repos/{owner}/{repo}/git/ref/{ref}",
  "GET /repos/{owner}/{repo}/git/matching-refs/{ref}",
  "POST /repos/{owner}/{repo}/git/refs",
  "DELETE /repos/{owner}/{repo}/git/refs/{ref}",
  "POST /repos/{owner}/{repo}/git/trees",
  "POST /repos/{owner}/{repo}/git/commits",
  "POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches",
  "GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs",
  "GET /repos/{owner}/{repo}/actions/runs/{run_id}",
  "POST /repos/{owner}/{repo}/actions/runs/{run_id}/cancel",
  "GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs",
  "GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts",
  "GET /repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}",
  "GET /repos/{owner}/{repo}",
  "POST /repos/{owner}/{repo}/pulls",
  "GET /repos/{owner}/{repo}/pulls",
  "GET /repos/{owner}/{repo}/pulls/{pull_number}",
  "PATCH /repos/{owner}/{repo}/pulls/{pull_number}",
  "GET /repos/{owner}/{repo}/pulls/{pull_number}/files",
  "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge",
  "GET /repos/{owner}/{repo}/compare/{basehead}",
  "POST /repos/{owner}/{repo}/merges",
  "POST /repos/{owner}/{repo}/issues",
  "PATCH /repos/{owner}/{repo}/issues/{issue_number}",
  "GET /repos/{owner}/{repo}/issues/{issue_number}/comments",
  "POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
  "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}",
  "POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
  "GET /repos/{owner}/{repo}/collaborators/{username}/permission",
  "POST /repos/{owner}/{repo}/check-runs",
  "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}",
  "GET /repos/{owner}/{repo}/issues",
  "GET /repos/{owner}/{repo}/git/blobs/{file_sha}",
  "PATCH /repos/{owner}/{repo}/git/refs/{ref}",
  "GET /repos/{owner}/{repo}/git/commits/{commit_sha}",
  "GET /repos/{owner}/{repo}/rules/branches/{branch}",
  "GET /repos/{owner}/{repo}/commits/{ref}/check-runs",
  "GET /repos/{owner}/{repo}/actions/permissions",
  "GET /repos/{owner}/{repo}/actions/permissions/workflow",
  "GET /repos/{owner}/{repo}/actions/workflows",
  "GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}",
  "PUT /repos/{owner}/{repo}/actions/workflows/{workflow_id}/enable",
  "PUT /repos/{owner}/{repo}/actions/workflows/{workflow_id}/disable",
  "GET /repos/{owner}/{repo}/actions/secrets",
  "GET /repos/{owner}/{repo}/actions/organization-secrets",
  "GET /repos/{owner}/{repo}/actions/variables",
  "GET /repos/{owner}/{repo}/issues/comments",
  "GET /repos/{owner}/{repo}/issues/{issue_number}",
  "GET /repos/{owner}/{repo}/commits",
  // The conformance suite's scratch rules (src/github/conformance/).
  "POST /repos/{owner}/{repo}/rulesets",
  "DELETE /repos/{owner}/{repo}/rulesets/{ruleset_id}",
];

const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
const subset = { source: `${spec.info.title} ${spec.info.version}`, operations: {} };
for (const operation of OPERATIONS) {
  const [method, path] = operation.split(" ");
  const op = spec.paths[path]?.[method.toLowerCase()];
  if (!op) throw new Error(`not in the description: ${operation}`);
  subset.operations[operation] = {
    operationId: op.operationId,
    query: (op.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name),
    body: op.requestBody?.content?.["application/json"]?.schema ?? null,
  };
}
// GraphQL is one endpoint; its documents are checked by shape in the tests.
writeFileSync("harness/github-openapi-subset.json", `${JSON.stringify(subset, null, 1)}\n`);
console.log(`${OPERATIONS.length} operations from ${subset.source}`);

/**
 * The fake GitHub's repository rulesets, made and removed through the API
 * (https://docs.github.com/en/rest/repos/rules#create-a-repository-ruleset, #delete-a-repository-ruleset):
 * what the conformance suite puts on its scratch branch. Only a person who administers the
 * repository may (the endpoints need the Administration permission, which GITHUB_TOKEN never holds and
 * agentrelay's app does not ask: 403 "Resource not accessible by integration" otherwise). An active
 * ruleset's rules become the fake's branch rules (fake-repo-settings.ts): linear history, required
 * status checks (strict or not), its pull_request rule and the merge methods it allows, a merge queue.
 */
import type { AddRoute } from "./fake-reply.ts";
import type { BranchRule, MergeMethod } from "./fake-repo-settings.ts";
import type { FakeGitHubState } from "./fake-state.ts";

interface RulesetRule {
  type: string;
  parameters?: {
    required_status_checks?: { context: string }[];
    strict_required_status_checks_policy?: boolean;
    allowed_merge_methods?: MergeMethod[];
  };
}

export function rulesetRoutes(gh: FakeGitHubState, route: AddRoute): void {
  const refused = [403, { message: "Resource not accessible by integration" }] as const;
  route("POST", "REPO\\/rulesets", (_m, body) => {
    if (gh.requester !== "person") return [...refused];
    const id = gh.newId();
    const include = ((body.conditions as { ref_name?: { include?: string[] } } | undefined)?.ref_name
      ?.include ?? []) as string[];
    const patterns = include.map((p) => p.replace(/^refs\/heads\//, ""));
    const rules = (body.rules ?? []) as RulesetRule[];
    if (body.enforcement === "active")
      for (const pattern of patterns) {
        const rule: BranchRule = { pattern, source: "ruleset", rulesetId: id };
        for (const r of rules) {
          if (r.type === "required_linear_history") rule.linearHistory = true;
          if (r.type === "required_status_checks") {
            rule.requiredChecks = (r.parameters?.required_status_checks ?? []).map((c) => c.context);
            if (r.parameters?.strict_required_status_checks_policy) rule.strict = true;
          }
          if (r.type === "pull_request") rule.pullRequest = true;
          if (r.type === "pull_request" && r.parameters?.allowed_merge_methods)
            rule.mergeMethods = r.parameters.allowed_merge_methods;
          if (r.type === "merge_queue") gh.settings.mergeQueue.add(pattern);
        }
        gh.settings.rules.push(rule);
      }
    return [201, { id, name: body.name, target: body.target ?? "branch", enforcement: body.enforcement }];
  });
  route("DELETE", "REPO\\/rulesets\\/(\\d+)", (m) => {
    if (gh.requester !== "person") return [...refused];
    const id = Number(m[1]);
    const ours = gh.settings.rules.filter((r) => r.rulesetId === id);
    if (ours.length === 0) return [404, { message: "Not Found" }];
    for (const rule of ours) {
      gh.settings.rules.splice(gh.settings.rules.indexOf(rule), 1);
      gh.settings.mergeQueue.delete(rule.pattern);
    }
    return [204];
  });
}

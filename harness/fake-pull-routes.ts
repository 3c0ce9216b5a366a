/**
 * The fake GitHub's pull requests and merges: opening one (422 when one is open for the branches or
 * nothing is between them), listing, reading (with `mergeable` computed as GitHub does, `null` for a
 * while after a conflict), closing and merging one (405 for what GitHub refuses: a method the
 * settings forbid, checks not passed, workflow files without the permission, a base that moved), and
 * merging a branch into another.
 */
import { ACTIONS_MAY_NOT_OPEN_PRS, type MergeMethod, workflowsRefusal } from "./fake-repo-settings.ts";
import { dequeue, MERGE_QUEUE_REQUIRED } from "./fake-merge-queue.ts";
import type { AddRoute } from "./fake-reply.ts";
import type { FakeGitHubState, FakePull } from "./fake-state.ts";

export function pullRoutes(gh: FakeGitHubState, route: AddRoute): void {
  route("POST", "REPO\\/pulls", (_m, body) => {
    const head = String(body.head);
    const base = String(body.base);
    if (gh.pulls.some((p) => p.head === head && p.base === base && p.state === "open")) {
      return [
        422,
        {
          message: "Validation Failed",
          errors: [{ message: `A pull request already exists for ${gh.owner}:${head}.` }],
        },
      ];
    }
    if (
      gh.branches.has(head) &&
      gh.branches.has(base) &&
      gh.store.aheadBy(gh.branches.get(base)!, gh.branches.get(head)!) === 0
    ) {
      return [
        422,
        { message: "Validation Failed", errors: [{ message: `No commits between ${base} and ${head}` }] },
      ];
    }
    if (!gh.branches.has(head))
      return [422, { message: "Validation Failed", errors: [{ field: "head", code: "invalid" }] }];
    if (gh.settings.token === "github_token" && !gh.settings.actionsCanCreatePullRequests)
      return [403, { message: ACTIONS_MAY_NOT_OPEN_PRS }];
    const p: FakePull = {
      number: gh.issues.length + gh.pulls.length + 1,
      head,
      base,
      title: String(body.title),
      body: String(body.body ?? ""),
      state: "open",
      merged: false,
    };
    gh.pulls.push(p);
    gh.onPullOpened(p);
    return [201, gh.pr(p)];
  });
  route("GET", "REPO\\/pulls", (_m, _b, q) => {
    const head = q.get("head")?.split(":")[1];
    return [
      200,
      gh.pulls
        .filter(
          (p) =>
            (!head || p.head === head) &&
            (!q.get("state") || q.get("state") === "all" || p.state === q.get("state")),
        )
        .map((p) => gh.pr(p)),
    ];
  });
  route("GET", "REPO\\/pulls\\/(\\d+)", (m) => [200, gh.pr(gh.pull(m[1]))]);
  route("GET", "REPO\\/pulls\\/(\\d+)\\/files", (m) => {
    const p = gh.pull(m[1]);
    return [200, gh.store.changed(gh.branch(p.base), gh.branch(p.head))];
  });
  route("PATCH", "REPO\\/pulls\\/(\\d+)", (m, body) => {
    const p = gh.pull(m[1]);
    if (body.state === "closed" && !p.merged) {
      p.state = "closed";
      dequeue(gh, p);
    }
    return [200, gh.pr(p)];
  });
  route("PUT", "REPO\\/pulls\\/(\\d+)\\/merge", (m, body) => {
    const p = gh.pull(m[1]);
    if (p.merged || p.state !== "open") return [405, { message: "Pull Request is not mergeable" }];
    if (gh.settings.mergeQueue.has(p.base)) return [405, { message: MERGE_QUEUE_REQUIRED }];
    // `sha`: "SHA that pull request head must match to allow merge"; else 409 "Head branch was
    // modified. Review and try the merge again." (https://docs.github.com/en/rest/pulls/pulls#merge-a-pull-request)
    if (body.sha !== undefined && body.sha !== gh.branches.get(p.head))
      return [409, { message: "Head branch was modified. Review and try the merge again." }];
    const method = (body.merge_method ?? "merge") as MergeMethod;
    const refused = gh.settings.refusedMethod(method, p.base);
    if (refused) return [405, { message: refused }];
    const checks = gh.requiredChecksRefusal(p);
    if (checks) return [405, { message: checks }];
    const workflows = gh.mayChangeWorkflows()
      ? []
      : gh.workflowsChangedBy(gh.branches.get(p.base), gh.branches.get(p.head));
    if (workflows.length > 0) return workflowsRefusal(workflows[0]!);
    // Another merge landed on the base while this one was being made: GitHub answers 405 "Base branch
    // was modified. Review and try the merge again." (seen in NixOS/nixpkgs-merge-bot#179 and
    // quipper/monorepo-deploy-actions#492, where a retry of the merge succeeds).
    if (gh.baseMoves > 0) {
      gh.baseMoves--;
      return [405, { message: "Base branch was modified. Review and try the merge again." }];
    }
    const title = String(body.commit_title ?? `Merge #${p.number}`);
    const sha = gh.mergeInto(p.base, p.head, title, method);
    if (!sha) {
      p.conflict = true;
      p.computing = gh.mergeabilityReads;
      return [405, { message: "Pull Request is not mergeable" }];
    }
    const mergedHead = gh.branches.get(p.head);
    Object.assign(p, { merged: true, state: "closed", mergedAt: gh.clock.now(), mergedHead });
    gh.onMerge(p);
    return [200, { sha, merged: true, message: "Pull Request successfully merged" }];
  });
  // Merging a branch into another (GitHub's "merge a branch"): 201 with the commit, 204 when `base`
  // already has `head`, 409 on a conflict, 404 for a branch that does not exist.
  route("POST", "REPO\\/merges", (_m, body) => {
    const [base, head] = [String(body.base), String(body.head)];
    if (!gh.branches.has(base) || !gh.branches.has(head)) return [404, { message: "Not Found" }];
    if (gh.store.aheadBy(gh.branches.get(base)!, gh.branches.get(head)!) === 0) return [204];
    const workflows = gh.mayChangeWorkflows()
      ? []
      : gh.workflowsChangedBy(gh.branches.get(base), gh.branches.get(head));
    if (workflows.length > 0) return workflowsRefusal(workflows[0]!);
    if (gh.settings.linearHistory(base))
      // Refused as a ruleset refuses a push of a merge commit (peter-evans/create-pull-request#4428);
      // the status of this API's refusal is not documented: 422 here.
      return [
        422,
        { message: "Repository rule violations found\n\nThis branch must not contain merge commits." },
      ];
    const sha = gh.mergeInto(base, head, String(body.commit_message ?? `Merge ${head} into ${base}`));
    return sha ? [201, { sha }] : [409, { message: "Merge conflict" }];
  });
}

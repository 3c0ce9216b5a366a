/**
 * The conformance cases of who may read and change what (the merge buttons, the Actions PR setting,
 * workflow files) and of GitHub's limits (body sizes, check-run outputs, rate-limit headers, the
 * rules API's pages), each observed through the API as the product meets it.
 */
import { readBranchPolicy } from "../branch-policy.ts";
import { fit, LIMITS } from "../limits.ts";
import { WORKFLOWS_REFUSED } from "../merges.ts";
import {
  ask,
  type ConformanceCase,
  NotObservable,
  refused,
  said,
  serverOf,
  withWorkflowScope,
} from "./model.ts";

const MERGE_FIELDS = ["allow_merge_commit", "allow_squash_merge", "allow_rebase_merge"] as const;
const REST = "https://docs.github.com/en/rest";

/** A workflow file that runs on nothing but a manual dispatch: never run by the suite. */
export const SCRATCH_WORKFLOW = {
  ".github/workflows/agentrelay-conformance.yml":
    "name: agentrelay conformance (scratch)\non: workflow_dispatch\njobs:\n  none:\n    runs-on: ubuntu-latest\n    steps:\n      - run: 'true'\n",
};

const mergeFields = (data: unknown) =>
  MERGE_FIELDS.filter((f) => typeof (data as Record<string, unknown>)[f] === "boolean");

export const SETTINGS_CASES: ConformanceCase[] = [
  {
    id: "settings.merge-buttons.person",
    area: "settings",
    rule: "A repository's answer carries its merge buttons (allow_merge_commit, allow_squash_merge, allow_rebase_merge) for a person who administers it",
    expected: "the three fields, as booleans",
    documentation: "documented",
    citation: `${REST}/repos/repos#get-a-repository (the answer's schema)`,
    needs: [],
    async run(probe) {
      const a = await ask(probe.person, "GET /repos/{owner}/{repo}", {
        owner: probe.owner,
        repo: probe.repo,
      });
      const present = mergeFields(a.data);
      return present.length === 3
        ? { observed: "all three fields", verdict: "as documented" }
        : { observed: `${present.length} of the three fields`, verdict: "stricter" };
    },
  },
  {
    id: "settings.merge-buttons.server",
    area: "settings",
    rule: "The merge buttons are absent from a repository's answer to a server-to-server token without Administration (GITHUB_TOKEN, agentrelay's app): absent counts as allowed and a 405 names a refused method",
    expected: "none of the three fields",
    documentation: "undocumented",
    citation:
      "measured: s4k10503/velvet#320 (GITHUB_TOKEN), integrations/terraform-provider-github#679 (fine-grained tokens)",
    needs: ["server-token"],
    async run(probe) {
      const a = await ask(serverOf(probe), "GET /repos/{owner}/{repo}", {
        owner: probe.owner,
        repo: probe.repo,
      });
      const present = mergeFields(a.data);
      return present.length === 0
        ? { observed: "no merge-button field", verdict: "as documented" }
        : { observed: `answered ${present.join(", ")}`, verdict: "more permissive" };
    },
  },
  {
    id: "settings.actions-pr-setting.person",
    area: "settings",
    rule: 'A person who administers the repository reads "Allow GitHub Actions to create and approve pull requests" (can_approve_pull_request_reviews)',
    expected: "200 with a boolean",
    documentation: "documented",
    citation: `${REST}/actions/permissions#get-default-workflow-permissions-for-a-repository`,
    needs: ["admin"],
    async run(probe) {
      const a = await ask(probe.person, "GET /repos/{owner}/{repo}/actions/permissions/workflow", {
        owner: probe.owner,
        repo: probe.repo,
      });
      if (a.status === 403 || a.status === 404)
        throw new NotObservable("the person's token does not administer the repository");
      const value = (a.data as { can_approve_pull_request_reviews?: unknown })
        .can_approve_pull_request_reviews;
      return typeof value === "boolean"
        ? { observed: `200, ${value}`, verdict: "as documented" }
        : { observed: `${said(a)} without the field`, verdict: "differs" };
    },
  },
  {
    id: "settings.actions-pr-setting.server",
    area: "settings",
    rule: "The Actions PR setting is refused to a token without Administration (GITHUB_TOKEN never holds it): doctor reads it with a person's token only",
    expected: '403 "Resource not accessible by integration"',
    documentation: "documented",
    citation: `${REST}/actions/permissions#get-default-workflow-permissions-for-a-repository (needs Administration: read)`,
    needs: ["server-token"],
    async run(probe) {
      const a = await ask(serverOf(probe), "GET /repos/{owner}/{repo}/actions/permissions/workflow", {
        owner: probe.owner,
        repo: probe.repo,
      });
      return refused(a, 403, /not accessible/i);
    },
  },
  {
    id: "settings.workflows.ref-update",
    area: "settings",
    rule: "A token without the workflows permission may not move a branch to a commit that changes .github/workflows/ (GITHUB_TOKEN can never hold it)",
    expected: "403 refusing to create or update the workflow, in the words the product reads",
    documentation: "documented",
    citation: `${REST}/authentication/permissions-required-for-github-apps#repository-permissions-for-workflows; words: actions/actions-runner-controller#2410`,
    needs: ["server-token"],
    async run(probe) {
      const server = serverOf(probe);
      const pull = await probe.pull("workflows-push");
      const sha = await probe.commit(SCRATCH_WORKFLOW, pull.headSha);
      const a = await ask(server, "PATCH /repos/{owner}/{repo}/git/refs/{ref}", {
        owner: probe.owner,
        repo: probe.repo,
        ref: `heads/${pull.head}`,
        sha,
        force: false,
      });
      return refused(a, 403, WORKFLOWS_REFUSED);
    },
  },
  {
    id: "settings.workflows.merge",
    area: "settings",
    rule: "A token without the workflows permission may not merge a pull request that changes .github/workflows/",
    expected: "403 refusing to create or update the workflow",
    documentation: "documented",
    citation: `${REST}/authentication/permissions-required-for-github-apps#repository-permissions-for-workflows; words: KeisukeYamashita/auto-pull-request-merge#481`,
    needs: ["server-token"],
    async run(probe) {
      const server = serverOf(probe);
      const pull = await withWorkflowScope(() => probe.pull("workflows-merge", SCRATCH_WORKFLOW));
      const a = await ask(server, "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
        owner: probe.owner,
        repo: probe.repo,
        pull_number: pull.number,
        sha: pull.headSha,
        merge_method: "squash",
      });
      return refused(a, 403, WORKFLOWS_REFUSED);
    },
  },
  {
    id: "limits.comment-body",
    area: "limits",
    rule: `A comment's body holds at most ${LIMITS.body.toLocaleString("en")} characters; the product cuts every text to fit (github/limits.ts)`,
    expected: "422 one character past it; the product's cut accepted",
    documentation: "undocumented",
    citation:
      'GitHub answers 422 "body is too long (maximum is 65536 characters)"; community discussion #27190',
    needs: [],
    async run(probe) {
      const pull = await probe.pull("comment-body");
      const post = (body: string) =>
        ask(probe.person, "POST /repos/{owner}/{repo}/issues/{issue_number}/comments", {
          owner: probe.owner,
          repo: probe.repo,
          issue_number: pull.number,
          body,
        });
      const long = "agentrelay conformance ".repeat(3000);
      const over = await post("x".repeat(LIMITS.body + 1));
      const cut = await post(fit(long, LIMITS.body));
      if (over.status < 300)
        return { observed: "accepted one character past it", verdict: "more permissive" };
      if (cut.status >= 300)
        return { observed: `the product's cut refused ${said(cut)}`, verdict: "stricter" };
      return {
        observed: `refused ${said(over)}; the cut accepted`,
        verdict: over.status === 422 ? "as documented" : "differs",
      };
    },
  },
  {
    id: "limits.check-run-output",
    area: "limits",
    rule: `A check run's summary holds at most ${LIMITS.checkText.toLocaleString("en")} characters and a request at most ${LIMITS.annotations} annotations`,
    expected: "422 past either; the product's cut accepted",
    documentation: "documented",
    citation: `${REST}/checks/runs#create-a-check-run (output.summary maxLength, annotations maxItems)`,
    needs: ["server-token"],
    async run(probe) {
      const server = serverOf(probe);
      const base = await probe.base();
      const { data } = await probe.person.rest.git.getRef({
        owner: probe.owner,
        repo: probe.repo,
        ref: `heads/${base}`,
      });
      const create = (summary: string, annotations: number) =>
        ask(server, "POST /repos/{owner}/{repo}/check-runs", {
          owner: probe.owner,
          repo: probe.repo,
          name: "agentrelay conformance",
          head_sha: data.object.sha,
          status: "completed",
          conclusion: "neutral",
          output: {
            title: "agentrelay conformance",
            summary,
            annotations: Array.from({ length: annotations }, (_, i) => ({
              path: "README.md",
              start_line: 1,
              end_line: 1,
              annotation_level: "notice",
              message: `annotation ${i + 1}`,
            })),
          },
        });
      const long = "agentrelay conformance ".repeat(3000);
      const summary = await create("x".repeat(LIMITS.checkText + 1), 1);
      const annotations = await create("ok", LIMITS.annotations + 1);
      const cut = await create(fit(long, LIMITS.checkText), LIMITS.annotations);
      const over = [summary, annotations].filter((a) => a.status < 300).length;
      if (over > 0)
        return { observed: `accepted ${over} request(s) past a limit`, verdict: "more permissive" };
      if (cut.status >= 300)
        return { observed: `the product's cut refused ${said(cut)}`, verdict: "stricter" };
      return {
        observed: `refused ${summary.status} and ${annotations.status}; the cut accepted`,
        verdict: summary.status === 422 && annotations.status === 422 ? "as documented" : "differs",
      };
    },
  },
  {
    id: "limits.rate-headers",
    area: "limits",
    rule: "Every answer tells the rate limit in x-ratelimit-limit, -remaining, -used, -reset and -resource, which the write pacing reads",
    expected: "the five headers, numbers where numbers",
    documentation: "documented",
    citation: `${REST}/using-the-rest-api/rate-limits-for-the-rest-api#checking-the-status-of-your-rate-limit`,
    needs: [],
    async run(probe) {
      const a = await ask(probe.person, "GET /repos/{owner}/{repo}", {
        owner: probe.owner,
        repo: probe.repo,
      });
      const names = ["limit", "remaining", "used", "reset"].map((n) => `x-ratelimit-${n}`);
      const missing = [...names, "x-ratelimit-resource"].filter((h) => a.headers[h] === undefined);
      const bad = names.filter((h) => a.headers[h] !== undefined && !/^\d+$/.test(String(a.headers[h])));
      return missing.length + bad.length === 0
        ? {
            observed: `limit ${a.headers["x-ratelimit-limit"]}, resource ${a.headers["x-ratelimit-resource"]}`,
            verdict: "as documented",
          }
        : { observed: `missing ${[...missing, ...bad].join(", ")}`, verdict: "differs" };
    },
  },
  {
    id: "limits.rules-pagination",
    area: "limits",
    rule: "The rules of a branch come in pages (per_page, a Link to the next); the product reads every page",
    expected: "one rule a page with a next link at per_page=1; every rule read by readBranchPolicy",
    documentation: "documented",
    citation: `${REST}/repos/rules#get-rules-for-a-branch`,
    needs: ["admin"],
    async run(probe) {
      const base = await probe.base();
      const remove = await probe.ruleset("pages", [
        { type: "required_linear_history" },
        {
          type: "required_status_checks",
          parameters: {
            strict_required_status_checks_policy: false,
            required_status_checks: [{ context: "agentrelay-conformance" }],
          },
        },
      ]);
      try {
        const page = await ask(probe.person, "GET /repos/{owner}/{repo}/rules/branches/{branch}", {
          owner: probe.owner,
          repo: probe.repo,
          branch: base,
          per_page: 1,
        });
        const policy = await readBranchPolicy(probe.person, probe.owner, probe.repo, base, {
          protection: false,
        });
        const paged =
          Array.isArray(page.data) && page.data.length === 1 && /rel="next"/.test(page.headers.link ?? "");
        const read = policy.linearHistory && policy.requiredChecks.includes("agentrelay-conformance");
        return {
          observed: `${paged ? "paged" : `not paged (${Array.isArray(page.data) ? page.data.length : "?"} rules, link ${page.headers.link ? "present" : "absent"})`}; ${read ? "both rules read" : "a rule missed"}`,
          verdict: paged && read ? "as documented" : "differs",
        };
      } finally {
        await remove();
      }
    },
  },
];

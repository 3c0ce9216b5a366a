/**
 * The conformance cases of merges (a merge pinned to the head it was judged on, the refusals the
 * product reads and acts on, the merge queue) and of the answers' shapes the product parses.
 */
import { METHOD_REFUSED } from "../branch-policy.ts";
import { CHECK_EXPECTED, MERGE_QUEUE } from "../merges.ts";
import { isStale, WRITE } from "../state-store.ts";
import { ask, type ConformanceCase, NotObservable, type Probe, refused, said, serverOf } from "./model.ts";

const REST = "https://docs.github.com/en/rest";
const CHECK = "agentrelay-conformance";

const merge = (probe: Probe, client: Probe["person"], number: number, extra: Record<string, unknown>) =>
  ask(client, "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
    owner: probe.owner,
    repo: probe.repo,
    pull_number: number,
    ...extra,
  });

/** A pull request into the scratch base under a ruleset of `rules`, and the merge `method` asked of it. */
async function underRule(probe: Probe, name: string, rules: object[], method: string) {
  const remove = await probe.ruleset(name, rules);
  try {
    const pull = await probe.pull(name);
    return await merge(probe, probe.person, pull.number, { sha: pull.headSha, merge_method: method });
  } finally {
    await remove();
  }
}

const ENQUEUE = `mutation($input: EnqueuePullRequestInput!) { enqueuePullRequest(input: $input) { mergeQueueEntry { position } } }`;

const MERGE_QUEUE_RULE = {
  type: "merge_queue",
  parameters: {
    check_response_timeout_minutes: 10,
    grouping_strategy: "ALLGREEN",
    max_entries_to_build: 1,
    max_entries_to_merge: 1,
    merge_method: "SQUASH",
    min_entries_to_merge: 1,
    min_entries_to_merge_wait_minutes: 0,
  },
};

/** A ruleset that requires a merge queue, or NotObservable where the repository cannot have one. */
async function queueRuleset(probe: Probe): Promise<() => Promise<void>> {
  try {
    return await probe.ruleset("queue", [MERGE_QUEUE_RULE]);
  } catch (error) {
    if (error instanceof NotObservable)
      throw new NotObservable(`no merge queue here (organisation repositories only): ${error.message}`);
    throw error;
  }
}

/** A GraphQL request's outcome: its data, or its errors' messages (the error itself for isStale). */
async function graphql(client: Probe["person"], query: string, variables: Record<string, unknown>) {
  try {
    return { data: await client.graphql<unknown>(query, variables), error: null };
  } catch (error) {
    const errors = (error as { errors?: { message?: string }[] }).errors;
    const message = errors?.map((e) => e.message).join("; ") ?? (error as Error).message;
    return { data: null, error, message };
  }
}

export const MERGE_CASES: ConformanceCase[] = [
  {
    id: "merges.sha-pin",
    area: "merges",
    rule: "A merge given `sha` merges only if the PR's head is still that commit (the product merges what it judged)",
    expected: '409 "Head branch was modified" for another sha; merged for the head\'s',
    documentation: "documented",
    citation: `${REST}/pulls/pulls#merge-a-pull-request`,
    needs: [],
    async run(probe) {
      const pull = await probe.pull("sha-pin");
      const stale = await probe.commit({ "agentrelay-conformance/stale.txt": "stale\n" });
      const wrong = await merge(probe, probe.person, pull.number, { sha: stale, merge_method: "squash" });
      if (wrong.status < 300) return { observed: "merged with another sha", verdict: "more permissive" };
      const right = await merge(probe, probe.person, pull.number, {
        sha: pull.headSha,
        merge_method: "squash",
      });
      const merged = (right.data as { merged?: boolean; sha?: string } | undefined) ?? {};
      const ok = wrong.status === 409 && /Head branch was modified/i.test(wrong.message);
      return {
        observed: `${said(wrong)}; then ${right.status < 300 && merged.merged && merged.sha ? "merged" : said(right)}`,
        verdict: ok && right.status === 200 && merged.merged === true ? "as documented" : "differs",
      };
    },
  },
  {
    id: "merges.linear-history",
    area: "merges",
    rule: "A branch whose rules require linear history refuses a merge commit with 405 in words the product reads as a refused method (it tries the next)",
    expected: '405 "… must not contain merge commits."',
    documentation: "undocumented",
    citation: `${REST}/repos/rules (required_linear_history); the 405's words: chdsbd/kodiak#295, peter-evans/create-pull-request#4428`,
    needs: ["admin"],
    async run(probe) {
      return refused(
        await underRule(probe, "linear", [{ type: "required_linear_history" }], "merge"),
        405,
        METHOD_REFUSED,
      );
    },
  },
  {
    id: "merges.rule-methods",
    area: "merges",
    rule: "A ruleset's pull_request rule that allows only some merge methods refuses the others with 405",
    expected: '405 "… are not allowed on this branch."',
    documentation: "undocumented",
    citation: `${REST}/repos/rules (pull_request.allowed_merge_methods); the 405's words are not documented`,
    needs: ["admin"],
    async run(probe) {
      const rule = {
        type: "pull_request",
        parameters: {
          allowed_merge_methods: ["squash"],
          dismiss_stale_reviews_on_push: false,
          require_code_owner_review: false,
          require_last_push_approval: false,
          required_approving_review_count: 0,
          required_review_thread_resolution: false,
        },
      };
      return refused(await underRule(probe, "methods", [rule], "merge"), 405, METHOD_REFUSED);
    },
  },
  {
    id: "merges.required-check",
    area: "merges",
    rule: "A required status check that has not reported holds a merge with 405 naming it, which the product turns into a wait",
    expected: `405 'Required status check "${CHECK}" is expected.'`,
    documentation: "undocumented",
    citation: `${REST}/repos/rules (required_status_checks); the 405's words: Mergify's REQUIRED_STATUS_RE`,
    needs: ["admin"],
    async run(probe) {
      const rule = {
        type: "required_status_checks",
        parameters: {
          strict_required_status_checks_policy: false,
          required_status_checks: [{ context: CHECK }],
        },
      };
      return refused(await underRule(probe, "check", [rule], "squash"), 405, CHECK_EXPECTED);
    },
  },
  {
    id: "merges.merge-queue",
    area: "merges",
    rule: "A branch that requires a merge queue refuses a direct merge with 405, and a person's token enqueues the PR with GraphQL enqueuePullRequest",
    expected: '405 "Changes must be made through the merge queue"; enqueued',
    documentation: "undocumented",
    citation:
      "https://docs.github.com/en/graphql/reference/mutations#enqueuepullrequest; the 405: pascalgn/automerge-action#235, cncf/prow-github-actions#166",
    needs: ["admin", "merge-queue"],
    async run(probe) {
      const remove = await queueRuleset(probe);
      try {
        const pull = await probe.pull("queue");
        const direct = await merge(probe, probe.person, pull.number, {
          sha: pull.headSha,
          merge_method: "squash",
        });
        const verdict = refused(direct, 405, MERGE_QUEUE);
        if (verdict.verdict !== "as documented") return verdict;
        const queued = await graphql(probe.person, ENQUEUE, { input: { pullRequestId: pull.nodeId } });
        return queued.error
          ? { observed: `${verdict.observed}; enqueue refused: ${queued.message}`, verdict: "stricter" }
          : { observed: `${verdict.observed}; enqueued`, verdict: "as documented" };
      } finally {
        await remove();
      }
    },
  },
  {
    id: "merges.enqueue.server",
    area: "merges",
    rule: "A server-to-server token (agentrelay's app, GITHUB_TOKEN) may enqueue a PR: GitHub's GraphQL reference does not say which tokens may; the product falls back to a person when refused",
    expected: "enqueued (the product's reading; a refusal makes it a person's wait)",
    documentation: "undocumented",
    citation: "https://docs.github.com/en/graphql/reference/mutations#enqueuepullrequest (silent on tokens)",
    needs: ["server-token", "admin", "merge-queue"],
    async run(probe) {
      const server = serverOf(probe);
      const remove = await queueRuleset(probe);
      try {
        const pull = await probe.pull("queue-server");
        const queued = await graphql(server, ENQUEUE, { input: { pullRequestId: pull.nodeId } });
        return queued.error
          ? { observed: `refused: ${queued.message}`, verdict: "stricter" }
          : { observed: "enqueued", verdict: "as documented" };
      } finally {
        await remove();
      }
    },
  },
  {
    id: "shapes.pull",
    area: "shapes",
    rule: "A pull request's answer has the fields the product reads: number, node_id, html_url, state, merged, mergeable (null while computed), mergeable_state, head.ref, head.sha, base.ref",
    expected: "each field, of its type",
    documentation: "documented",
    citation: `${REST}/pulls/pulls#get-a-pull-request`,
    needs: [],
    async run(probe) {
      const pull = await probe.pull("shape");
      const a = await ask(probe.person, "GET /repos/{owner}/{repo}/pulls/{pull_number}", {
        owner: probe.owner,
        repo: probe.repo,
        pull_number: pull.number,
      });
      const p = a.data as Record<string, unknown> & {
        head?: Record<string, unknown>;
        base?: Record<string, unknown>;
      };
      const wrong = [
        ["number", typeof p.number === "number"],
        ["node_id", typeof p.node_id === "string"],
        ["html_url", typeof p.html_url === "string"],
        ["state", p.state === "open"],
        ["merged", typeof p.merged === "boolean"],
        ["mergeable", p.mergeable === null || typeof p.mergeable === "boolean"],
        ["mergeable_state", typeof p.mergeable_state === "string"],
        ["head.ref", p.head?.ref === pull.head],
        ["head.sha", p.head?.sha === pull.headSha],
        ["base.ref", typeof p.base?.ref === "string"],
      ].filter(([, ok]) => !ok);
      return wrong.length === 0
        ? { observed: "every field", verdict: "as documented" }
        : { observed: `wrong or missing: ${wrong.map(([f]) => f).join(", ")}`, verdict: "differs" };
    },
  },
  {
    id: "shapes.check-runs",
    area: "shapes",
    rule: "A commit's latest check runs list each one's name, status, conclusion and output (title, summary): what the product reads of a required check that runs or failed, and tells a repair",
    expected: "the check run as created, with those fields",
    documentation: "documented",
    citation: `${REST}/checks/runs#list-check-runs-for-a-git-reference`,
    needs: ["server-token"],
    async run(probe) {
      const server = serverOf(probe);
      const pull = await probe.pull("check-runs");
      const made = await ask(server, "POST /repos/{owner}/{repo}/check-runs", {
        owner: probe.owner,
        repo: probe.repo,
        name: CHECK,
        head_sha: pull.headSha,
        status: "completed",
        conclusion: "failure",
        output: { title: "agentrelay conformance", summary: "a failure on purpose" },
      });
      if (made.status >= 300) return { observed: `creating one refused ${said(made)}`, verdict: "stricter" };
      const { data } = await probe.person.rest.checks.listForRef({
        owner: probe.owner,
        repo: probe.repo,
        ref: pull.headSha,
        filter: "latest",
        per_page: 100,
      });
      const run = data.check_runs.find((c) => c.name === CHECK);
      const ok =
        run?.status === "completed" &&
        run.conclusion === "failure" &&
        run.output?.title === "agentrelay conformance" &&
        run.output?.summary === "a failure on purpose";
      return ok
        ? { observed: "listed with its fields", verdict: "as documented" }
        : { observed: run ? "listed without all its fields" : "not listed", verdict: "differs" };
    },
  },
  {
    id: "shapes.pull-exists",
    area: "shapes",
    rule: "Opening a PR that is already open for the same branches answers 422, which the product answers by finding the open one",
    expected: '422 "A pull request already exists …"',
    documentation: "documented",
    citation: `${REST}/pulls/pulls#create-a-pull-request (422 Validation failed)`,
    needs: [],
    async run(probe) {
      const pull = await probe.pull("twice");
      const a = await ask(probe.person, "POST /repos/{owner}/{repo}/pulls", {
        owner: probe.owner,
        repo: probe.repo,
        head: pull.head,
        base: await probe.base(),
        title: "agentrelay conformance: twice",
      });
      return refused(a, 422, /already exists/i);
    },
  },
  {
    id: "shapes.ref-exists",
    area: "shapes",
    rule: "Creating a branch that exists answers 422, which the product takes as made before",
    expected: '422 "Reference already exists"',
    documentation: "documented",
    citation: `${REST}/git/refs#create-a-reference (422 Validation failed)`,
    needs: [],
    async run(probe) {
      const pull = await probe.pull("ref-twice");
      const a = await ask(probe.person, "POST /repos/{owner}/{repo}/git/refs", {
        owner: probe.owner,
        repo: probe.repo,
        ref: `refs/heads/${pull.head}`,
        sha: pull.headSha,
      });
      return refused(a, 422, /already exists/i);
    },
  },
  {
    id: "shapes.ref-fast-forward",
    area: "shapes",
    rule: "Moving a branch without force only fast-forwards it: another commit is refused",
    expected: '422 "Update is not a fast forward"',
    documentation: "documented",
    citation: `${REST}/git/refs#update-a-reference (force)`,
    needs: [],
    async run(probe) {
      const pull = await probe.pull("fast-forward");
      const sibling = await probe.commit({ "agentrelay-conformance/sibling.txt": "sibling\n" });
      const a = await ask(probe.person, "PATCH /repos/{owner}/{repo}/git/refs/{ref}", {
        owner: probe.owner,
        repo: probe.repo,
        ref: `heads/${pull.head}`,
        sha: sibling,
        force: false,
      });
      return refused(a, 422, /not a fast forward/i);
    },
  },
  {
    id: "shapes.commit-on-branch-stale",
    area: "shapes",
    rule: "createCommitOnBranch with an expectedHeadOid that is no longer the head is refused, in words the state store reads as a lost compare-and-swap",
    expected: "an error the state store's isStale recognises (STALE_DATA)",
    documentation: "documented",
    citation:
      "https://docs.github.com/en/graphql/reference/input-objects#createcommitonbranchinput (expectedHeadOid)",
    needs: [],
    async run(probe) {
      const pull = await probe.pull("compare-and-swap");
      const stale = await probe.commit({ "agentrelay-conformance/older.txt": "older\n" });
      const result = await graphql(probe.person, WRITE, {
        input: {
          branch: { repositoryNameWithOwner: `${probe.owner}/${probe.repo}`, branchName: pull.head },
          expectedHeadOid: stale,
          message: { headline: "agentrelay conformance: a stale write" },
          fileChanges: {
            additions: [
              { path: "agentrelay-conformance/cas.txt", contents: Buffer.from("cas\n").toString("base64") },
            ],
          },
        },
      });
      if (!result.error) return { observed: "committed on a stale head", verdict: "more permissive" };
      return isStale(result.error)
        ? { observed: "refused as stale", verdict: "as documented" }
        : { observed: `refused: ${result.message}`, verdict: "differs" };
    },
  },
];

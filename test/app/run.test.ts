import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Harness, pushPayload, repository, runJob, startApp, user } from "../../harness/app.ts";
import { DIAMOND } from "../../harness/graphs.ts";

let h: Harness;
beforeEach(async () => {
  h = await startApp();
});
afterEach(() => h.close());

/** Runs every dispatched job not yet run, until none is left. */
async function runAll(result: Parameters<typeof runJob>[2] = {}): Promise<void> {
  let done = 0;
  while (done < h.gh.dispatches.length) await runJob(h, h.gh.dispatches[done++]!, result);
}

describe("a run on GitHub", () => {
  it("starts on a push to the default branch, reading the graph at the pushed commit", async () => {
    const sha = await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
    // The branch moves on; the run must follow the pushed commit, not the head.
    h.gh.commit("main", {
      ".workflow/diamond.yaml": DIAMOND.replace("description: first", "description: changed"),
    });
    const state = h.gh.state("diamond/1") as unknown as {
      source: { commit: string; text: string };
      tasks: Record<string, { status: string }>;
    };
    expect(state.source.commit).toBe(sha);
    expect(state.source.text).toBe(DIAMOND);
    expect(h.gh.dispatches.map((d) => d.inputs)).toEqual([
      {
        run: "diamond/1",
        task: "a",
        attempt: "1",
        "state-version": expect.stringMatching(/^[0-9a-f]{40}$/),
        credential: "",
      },
    ]);
    expect(h.gh.branches.get("agentrelay/diamond/ws_a/integration")).toBe(sha);
    expect(h.gh.issues.map((i) => i.title)).toEqual(["agentrelay run diamond/1"]);
    expect(h.gh.comments[0]!.body).toContain("<!-- agentrelay:status run=diamond/1 -->");
    expect(state.tasks.a!.status).toBe("running");
  });

  it("runs a four-workstream diamond to the end: task PRs merged, integration PRs auto-merged, in dependency order", async () => {
    await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
    await runAll();
    const state = h.gh.state("diamond/1");
    expect(state.outcome).toBe("succeeded");
    expect(h.gh.dispatches.map((d) => d.inputs.task)).toEqual(["a", "b", "c", "d"]);
    // Every task's work reached main through its task PR and its workstream's integration PR.
    for (const task of ["a", "b", "c", "d"])
      expect(h.gh.file("main", `${task}.txt`)).toContain(`work of ${task}`);
    const prs = h.gh.pulls.map((p) => `${p.head} -> ${p.base} ${p.merged ? "merged" : p.state}`);
    expect(prs).toEqual(
      expect.arrayContaining([
        "agentrelay/diamond/a -> agentrelay/diamond/ws_a/integration merged",
        "agentrelay/diamond/ws_a/integration -> main merged",
        "agentrelay/diamond/d -> agentrelay/diamond/ws_d/integration merged",
        "agentrelay/diamond/ws_d/integration -> main merged",
      ]),
    );
    expect(prs).toHaveLength(8);
    // d started only after both its upstream workstreams were merged into main.
    const merges = h.gh.log(/PUT .*merge|POST .*dispatches/);
    expect(
      merges.lastIndexOf("POST /repos/octo/demo/actions/workflows/agentrelay-task.yml/dispatches"),
    ).toBeGreaterThan(5);
    expect(h.gh.pulls.find((p) => p.head.endsWith("ws_a/integration"))!.body).toContain("- `a`: first");
    expect(h.gh.checkRuns.map((c) => `${c.name} ${c.conclusion}`).sort()).toEqual([
      "agentrelay / a success",
      "agentrelay / b success",
      "agentrelay / c success",
      "agentrelay / d success",
    ]);
    expect(h.gh.issues[0]!.state).toBe("closed");
    const status = h.gh.comments.find((c) => c.body.includes("agentrelay:status"))!.body;
    expect(status).toContain("done (4 merged)");
    expect(status).toMatch(
      /\| `d` \| `ws_d` \| merged \| \[1\]\(https:\/\/github.com\/octo\/demo\/actions\/runs\/\d+\) \|/,
    );
  });

  it("leaves an integration PR for review when an agent raised a design concern", async () => {
    await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
    await runJob(h, h.gh.dispatches[0]!, { concerns: ["the API shape is questionable"] });
    const integration = h.gh.pulls.find((p) => p.head === "agentrelay/diamond/ws_a/integration")!;
    expect(integration.state).toBe("open");
    expect(integration.body).toContain("## Concerns\n### a\n- the API shape is questionable");
    expect(h.gh.dispatches).toHaveLength(1); // b and c wait for ws_a to merge
    // A person merges it: the app hears of it and goes on.
    h.gh.pulls.splice(h.gh.pulls.indexOf(integration), 1, { ...integration, merged: true, state: "closed" });
    const status = await h.deliver("pull_request", {
      action: "closed",
      number: integration.number,
      pull_request: {
        number: integration.number,
        html_url: "https://github.com/octo/demo/pull/x",
        merged: true,
        head: {
          ref: integration.head,
          sha: h.gh.branches.get(integration.head)!,
          repo: { full_name: "octo/demo" },
        },
        base: { ref: "main" },
      },
      repository: { ...(await import("../../harness/app.ts")).repository(h.gh) },
      sender: { login: "alice", type: "User" },
    });
    expect(status).toBe(200);
    expect(h.gh.dispatches.map((d) => d.inputs.task)).toEqual(["a", "b", "c"]);
  });

  it("retries a failed job within max_task_attempts, on the same branch", async () => {
    await h.pushGraph(".workflow/diamond.yaml", `max_task_attempts: 2\n${DIAMOND}`);
    const first = h.gh.dispatches[0]!;
    await runJob(h, first, {
      outcome: "failed",
      reason: "Completion gate failed after 1 attempt(s): pytest -q",
      gates: [{ n: 1, passed: false }],
      gateOutput: "FAILED tests/test_calc.py::test_add - assert 3 == 4\n[agentrelay] exit code 1",
    });
    expect(h.gh.dispatches[1]!.inputs).toMatchObject({ task: "a", attempt: "2" });
    // The check run says why, shows the end of the gate's output, and links the job's log.
    const jobLog = `https://github.com/octo/demo/actions/runs/${first.runId}`;
    expect(h.gh.checkRuns[0]).toMatchObject({
      name: "agentrelay / a",
      conclusion: "failure",
      details_url: jobLog,
    });
    const { summary } = (h.gh.checkRuns[0] as unknown as { output: { summary: string } }).output;
    expect(summary).toContain("Attempt 1 failed: Completion gate failed after 1 attempt(s): pytest -q.");
    expect(summary).toContain(
      "### Gate output (end)\n```text\nFAILED tests/test_calc.py::test_add - assert 3 == 4\n[agentrelay] exit code 1\n```",
    );
    expect(summary).toContain(`[The job's log](${jobLog})`);
    await runJob(h, h.gh.dispatches[1]!);
    const pr = h.gh.pulls.find((p) => p.head === "agentrelay/diamond/a")!;
    expect(pr.body).toContain(
      `attempt 2 ([its job](https://github.com/octo/demo/actions/runs/${h.gh.dispatches[1]!.runId}))`,
    );
    expect(h.gh.checkRuns).toHaveLength(1); // one check run per task, updated
    expect(h.gh.checkRuns[0]).toMatchObject({ conclusion: "success" });
    expect(h.gh.state("diamond/1").tasks.a!.status).toBe("merged");
  });

  it("takes a job that ended without success from workflow_run.completed", async () => {
    await h.pushGraph(".workflow/diamond.yaml", `max_task_attempts: 2\n${DIAMOND}`);
    const d = h.gh.dispatches[0]!;
    const status = await h.deliver("workflow_run", {
      action: "completed",
      workflow_run: {
        // Where the run comes from (path, event, branch, repository, when), as GitHub sends it.
        ...h.gh.workflowRuns.get(d.runId),
        id: d.runId,
        path: ".github/workflows/agentrelay-task.yml",
        display_title: `agentrelay diamond/1 a attempt 1`,
        conclusion: "timed_out",
        status: "completed",
        html_url: "https://github.com/octo/demo/actions/runs/1",
      },
      repository: (await import("../../harness/app.ts")).repository(h.gh),
      sender: { login: "alice", type: "User" },
    });
    expect(status).toBe(200);
    const a = (
      h.gh.state("diamond/1") as unknown as {
        tasks: { a: { attempts: { outcome: string }[]; attempt: number } };
      }
    ).tasks.a;
    expect(a.attempts[0]!.outcome).toBe("timed_out");
    expect(h.gh.dispatches.map((x) => `${x.inputs.task}/${x.inputs.attempt}`)).toEqual(["a/1", "a/2"]);
  });

  it("changes nothing when the same push is delivered twice, or a merge event repeats", async () => {
    const before = h.gh.branches.get("main")!;
    const after = h.gh.commit("main", { ".workflow/diamond.yaml": DIAMOND });
    const payload = pushPayload(h.gh, before, after, { added: [".workflow/diamond.yaml"] });
    await h.deliver("push", payload, { id: "same" });
    const calls = h.gh.calls.length;
    await h.deliver("push", payload, { id: "same" });
    expect(h.gh.dispatches).toHaveLength(1);
    expect(h.gh.issues).toHaveLength(1);
    // The repeat read the state and wrote nothing.
    expect(
      h.gh
        .log()
        .slice(calls)
        .filter((l) => !l.startsWith("GET") && !l.includes("access_tokens") && l !== "POST /graphql"),
    ).toEqual([]);
  });
});

describe("merging and dispatching the way GitHub allows", () => {
  it("waits for required checks on a task PR, and merges when a check suite completes", async () => {
    await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
    const pending = new Set<number>();
    // Branch protection: the task PR's required check has not reported yet.
    const original = h.gh.handle.bind(h.gh);
    h.gh.handle = (method, url, body) => {
      const reply = original(method, url, body);
      if (method === "POST" && url.endsWith("/pulls") && reply[0] === 201) {
        const pr = h.gh.pulls.at(-1)!;
        if (pr.head === "agentrelay/diamond/a") {
          pr.checksPending = true;
          pending.add(pr.number);
        }
      }
      return reply;
    };
    await runJob(h, h.gh.dispatches[0]!);
    const pr = h.gh.pulls.find((p) => p.head === "agentrelay/diamond/a")!;
    expect(pr).toMatchObject({ state: "open", merged: false });
    expect(h.gh.state("diamond/1").tasks.a!.status).toBe("pr_open");
    expect(h.gh.dispatches).toHaveLength(1);
    // CI goes green; GitHub sends check_suite.completed for the PR's branch.
    pr.checksPending = false;
    const status = await h.deliver("check_suite", {
      action: "completed",
      check_suite: {
        id: 5,
        head_branch: pr.head,
        head_sha: "x",
        status: "completed",
        conclusion: "success",
        pull_requests: [{ number: pr.number }],
      },
      repository: repository(h.gh),
      sender: user("github-actions[bot]", "Bot"),
    });
    expect(status).toBe(200);
    expect(pr.merged).toBe(true);
    expect(h.gh.dispatches.map((d) => d.inputs.task)).toEqual(["a", "b", "c"]);
    expect(pending.size).toBe(1);
  });

  it("fails the task when required checks fail on its PR, and retries it on the same branch", async () => {
    await h.pushGraph(".workflow/diamond.yaml", `max_task_attempts: 2\n${DIAMOND}`);
    const open = h.gh.handle.bind(h.gh);
    h.gh.handle = (method, url, body) => {
      const reply = open(method, url, body);
      // Branch protection: the first task PR's required check is red.
      if (method === "POST" && url.endsWith("/pulls") && reply[0] === 201 && h.gh.pulls.length === 1) {
        h.gh.pulls[0]!.checksPending = true;
      }
      return reply;
    };
    await runJob(h, h.gh.dispatches[0]!);
    const pr = h.gh.pulls[0]!;
    expect(pr.merged).toBe(false);
    await h.deliver("check_suite", {
      action: "completed",
      check_suite: {
        id: 6,
        head_branch: pr.head,
        head_sha: "x",
        status: "completed",
        conclusion: "failure",
        pull_requests: [{ number: pr.number }],
      },
      repository: repository(h.gh),
      sender: user("github-actions[bot]", "Bot"),
    });
    const { timeline } = h.gh.state("diamond/1") as unknown as {
      timeline: { type: string; detail?: string }[];
    };
    expect(timeline.filter((e) => e.type === "task_failed").map((e) => e.detail)).toEqual([
      "merging the task PR failed: checks failed on its PR (failure) (will retry)",
    ]);
    expect(h.gh.dispatches.map((d) => `${d.inputs.task}/${d.inputs.attempt}`)).toEqual(["a/1", "a/2"]);
  });

  it("lets only required checks decide a task PR's fate: a failed check nobody requires waits for the required one", async () => {
    await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
    h.gh.settings.rules.push({ pattern: "agentrelay/**", source: "ruleset", requiredChecks: ["ci"] });
    await runJob(h, h.gh.dispatches[0]!);
    const pr = h.gh.pulls.find((p) => p.head === "agentrelay/diamond/a")!;
    const head = h.gh.branches.get(pr.head)!;
    const suite = (conclusion: string) =>
      h.deliver("check_suite", {
        action: "completed",
        check_suite: {
          id: 8,
          head_branch: pr.head,
          head_sha: head,
          status: "completed",
          conclusion,
          pull_requests: [{ number: pr.number, base: { ref: pr.base } }],
        },
        repository: repository(h.gh),
        sender: user("github-actions[bot]", "Bot"),
      });
    // A lint workflow nobody requires fails; the required ci has not reported.
    h.gh.setCheck(head, "lint", "failure");
    expect(await suite("failure")).toBe(200);
    expect(h.gh.state("diamond/1").tasks.a!.status).toBe("pr_open");
    const status = () => h.gh.comments.find((c) => c.body.includes("agentrelay:status"))!.body;
    expect(status()).toContain(`Waiting: #${pr.number} waits for the required check ci`);
    h.gh.setCheck(head, "ci", "success");
    await suite("success");
    expect(pr.merged).toBe(true);
    expect(status()).not.toContain("waits for the required check");
  });

  it("dispatches without return_run_details where GitHub does not know it", async () => {
    h.gh.runDetails = false;
    await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
    expect(h.gh.dispatches).toHaveLength(1);
    const tries = h.gh.calls.filter((c) => c.path.endsWith("/dispatches"));
    expect(tries.map((c) => [c.status, "return_run_details" in (c.body as object)])).toEqual([
      [422, true],
      [204, false],
    ]);
  });

  it("retries a task from its check run's Re-run button, for people with write access", async () => {
    await h.pushGraph(".workflow/diamond.yaml", `max_task_attempts: 1\n${DIAMOND}`);
    await runJob(h, h.gh.dispatches[0]!, { outcome: "failed", reason: "flaky" });
    const check = h.gh.checkRuns[0]!;
    const rerun = (login: string) =>
      h.deliver("check_run", {
        action: "rerequested",
        check_run: {
          id: check.id,
          name: check.name,
          external_id: check.external_id,
          head_sha: check.head_sha,
          status: "completed",
        },
        repository: repository(h.gh),
        sender: user(login),
      });
    h.gh.permissions.set("bob", "read");
    await rerun("bob");
    expect(h.gh.dispatches).toHaveLength(1);
    h.gh.permissions.set("alice", "write");
    await rerun("alice");
    expect(h.gh.dispatches.map((d) => `${d.inputs.task}/${d.inputs.attempt}`)).toEqual(["a/1", "a/2"]);
  });
});

describe("a graph changed while its run is going", () => {
  it("resumes the run with the change: finished work kept, a new workstream prepared and run, drift reported", async () => {
    await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
    await runJob(h, h.gh.dispatches[0]!);
    const changed = `${DIAMOND.replace("  - id: ws_d\n    auto_merge: true\n", "  - id: ws_d\n    auto_merge: true\n  - id: ws_e\n    auto_merge: true\n")}  - id: e
    workstream_id: ws_e
    description: added later
`;
    const before = h.gh.branches.get("main")!;
    const after = h.gh.commit("main", { ".workflow/diamond.yaml": changed });
    expect(
      await h.deliver("push", pushPayload(h.gh, before, after, { modified: [".workflow/diamond.yaml"] })),
    ).toBe(200);
    const state = h.gh.state("diamond/1") as unknown as {
      source: { commit: string };
      tasks: Record<string, { status: string }>;
    };
    expect(state.source.commit).toBe(after);
    expect(state.tasks.a!.status).toBe("merged");
    expect(h.gh.branches.has("agentrelay/diamond/ws_e/integration")).toBe(true);
    // e waits for capacity (max_concurrency 2: b and c run); the change is reported on the tracking issue.
    expect(h.gh.dispatches.map((d) => d.inputs.task)).toEqual(["a", "b", "c"]);
    expect(h.gh.comments.at(-1)!.body).toContain(`The graph changed at ${after}`);
    for (let i = 1; i < h.gh.dispatches.length; i++) await runJob(h, h.gh.dispatches[i]!);
    expect(h.gh.dispatches.map((d) => d.inputs.task)).toEqual(["a", "b", "c", "e", "d"]);
    expect(h.gh.state("diamond/1").outcome).toBe("succeeded");
    expect(h.gh.file("main", "e.txt")).toContain("work of e");
  });
});

describe("every request the app makes", () => {
  it("to start a run, and for one attempt from token to the next dispatches", async () => {
    await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
    const repo = "/repos/octo/demo";
    expect(h.gh.log()).toEqual([
      "POST /app/installations/42/access_tokens", // the webhook's installation token
      `GET ${repo}/contents/.workflow%2Fdiamond.yaml`, // the graph at the pushed commit (no params: not cyberian)
      "POST /graphql", // runs of the graph so far (none: no state branch)
      `POST ${repo}/git/trees`, // the state branch, created holding run 1
      `POST ${repo}/git/commits`,
      `POST ${repo}/git/refs`, // the compare-and-swap of a new run
      `POST ${repo}/issues`, // the tracking issue
      // What `agentrelay doctor` finds that the app's token can read, for the first status comment:
      `GET ${repo}`, // the merge methods the repository allows
      `GET ${repo}/rules/branches/main`, // the rules of main and of integration branches
      `GET ${repo}/branches/main`,
      `GET ${repo}/rules/branches/agentrelay%2Fgraph%2Fworkstream%2Fintegration`,
      `GET ${repo}/branches/agentrelay%2Fgraph%2Fworkstream%2Fintegration`,
      `GET ${repo}/contents/.github%2Fworkflows`, // the workflow files (none here)
      `POST ${repo}/issues/1/comments`, // its status comment
      `POST ${repo}/git/refs`, // ws_a's integration branch, at the pushed commit
      "POST /graphql", // their ids and the branch written
      "POST /graphql", // whether a's PR merged already (a state gone back): no
      `POST ${repo}/actions/workflows/agentrelay-task.yml/dispatches`, // task a
      `PATCH ${repo}/issues/comments/1001`, // the status
      // The run GitHub created for a is not written: a's job is bound when it takes its first token.
    ]);
    expect(h.gh.branches.get("agentrelay/diamond/ws_a/integration")).toBe(h.gh.branches.get("main"));
    const before = h.gh.calls.length;
    await runJob(h, h.gh.dispatches[0]!);
    expect(h.gh.log().slice(before)).toEqual([
      `GET ${repo}/installation`, // the job's repository (then remembered)
      `GET ${repo}/actions/runs/${h.gh.dispatches[0]!.runId}`, // the job's run bears a's run-name
      "POST /graphql", // token: the attempt marked as answered, bound to this job
      "POST /app/installations/42/access_tokens", // the attempt's scoped token
      `POST ${repo}/pulls`, // report: task PR
      `GET ${repo}`, // the merge methods the repository allows, and the rules of the branch merged into
      `GET ${repo}/rules/branches/agentrelay%2Fdiamond%2Fws_a%2Fintegration`,
      `PUT ${repo}/pulls/2/merge`,
      `GET ${repo}/pulls`, // ws_a is done: whether its integration landed already (another replica's)
      `POST ${repo}/merges`, // no: its branch brought up to date with main (here: nothing to merge)
      `POST ${repo}/pulls`, // and its integration PR
      `GET ${repo}/rules/branches/main`,
      `PUT ${repo}/pulls/3/merge`, // auto-merge, no concern (so no status is mirrored on it)
      `POST ${repo}/git/refs`, // ws_b and ws_c may start, from the merge just made
      `POST ${repo}/git/refs`,
      `POST ${repo}/check-runs`, // a's check run
      "POST /graphql", // all of it written at once
      "POST /graphql", // whether b's or c's PR merged already: one query for both
      `POST ${repo}/actions/workflows/agentrelay-task.yml/dispatches`, // b
      `POST ${repo}/actions/workflows/agentrelay-task.yml/dispatches`, // c
      `PATCH ${repo}/issues/comments/1001`,
    ]);
    // The new workstreams start from main as ws_a's merge left it, which has a's work.
    expect(h.gh.branches.get("agentrelay/diamond/ws_b/integration")).toBe(h.gh.branches.get("main"));
    expect(h.gh.file("agentrelay/diamond/ws_c/integration", "a.txt")).toBeDefined();
  });
});

describe("a pushed graph past the size a run can hold", () => {
  it("is refused at once with a located line, nothing started, the delivery answered", async () => {
    const tasks = Array.from({ length: 20_001 }, (_, i) => `  - {id: t${i}, description: x}`).join("\n");
    await h.pushGraph(".workflow/huge.yaml", `name: huge\ntasks:\n${tasks}\n`);
    const check = h.gh.checkRuns.find((c) => c.name === "agentrelay / .workflow/huge.yaml")!;
    expect(check.conclusion).toBe("failure");
    expect(check.output!.summary).toContain(
      "tasks: must contain at most 20,000 tasks (this one has 20,001): split it into graphs that depend on each other's merges",
    );
    expect(h.gh.dispatches).toEqual([]);
    expect(h.gh.branches.has("agentrelay-state/huge")).toBe(false);
  });
});

describe("a push of a graph of megabytes (security case 82)", () => {
  it("is answered 202 before the graph is read, and worked after the answer", async () => {
    // Just past the megabyte from which a push is answered before its graph is read (app/push.ts):
    // what holds for it holds for the 8 MB the loader takes, which costs seven times the CPU to parse.
    const tasks = Array.from({ length: 32_000 }, (_, i) => `  - {id: t${i}, description: x}`).join("\n");
    const text = `name: huge\ntasks:\n${tasks}\n`;
    expect(text.length).toBeGreaterThan(1_000_000);
    const before = h.gh.branches.get("main")!;
    const after = h.gh.commit("main", { ".workflow/huge.yaml": text });
    const status = await h.deliver(
      "push",
      pushPayload(h.gh, before, after, { added: [".workflow/huge.yaml"] }),
    );
    // Answered before any of the work: the graph is refused (its check run) only after the answer.
    expect(status).toBe(202);
    expect(h.gh.checkRuns).toEqual([]);
    const end = Date.now() + 60_000;
    while (!h.logs.some((l) => l.endsWith("(push): handled after its answer")) && Date.now() < end)
      await new Promise((resolve) => setTimeout(resolve, 100));
    // The handler itself answered, before it read the graph (not the 9 s timer, which cannot fire
    // while a graph of megabytes is read).
    expect(h.logs.filter((l) => l.endsWith("(push): handled after its answer"))).toHaveLength(1);
    const check = h.gh.checkRuns.find((c) => c.name === "agentrelay / .workflow/huge.yaml")!;
    expect(check.conclusion).toBe("failure");
    expect(check.output!.summary).toContain("tasks: must contain at most 20,000 tasks (this one has 32,000)");
  }, 180_000);
});

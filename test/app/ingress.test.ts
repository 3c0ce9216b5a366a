import { isWrite } from "../../harness/fake-rate-limits.ts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type Harness,
  issueComment,
  pushPayload,
  repository,
  keyOf,
  runJob,
  startApp,
  user,
} from "../../harness/app.ts";
import { DIAMOND, TIERS } from "../../harness/graphs.ts";

let h: Harness;
beforeEach(async () => {
  h = await startApp();
});
afterEach(() => h.close());

function pullRequestEvent(action: string, number: number, head: string) {
  return {
    action,
    number,
    pull_request: {
      number,
      html_url: `https://github.com/octo/demo/pull/${number}`,
      merged: false,
      head: { ref: "feature", sha: head, repo: { full_name: "octo/demo" } },
      base: { ref: "main" },
    },
    repository: repository(h.gh),
    sender: user("alice"),
  };
}

describe("plan on pull request", () => {
  it("gives a graph PR a plan check run and one sticky comment, edited in place; nothing runs", async () => {
    h.gh.branches.set("feature", h.gh.branches.get("main")!);
    const head = h.gh.commit("feature", { ".workflow/diamond.yaml": DIAMOND });
    h.gh.openPull(5, "feature");
    expect(await h.deliver("pull_request", pullRequestEvent("opened", 5, head))).toBe(200);
    expect(h.gh.checkRuns).toMatchObject([
      { name: "agentrelay / plan", head_sha: head, conclusion: "success" },
    ]);
    const comment = h.gh.comments.find((c) => c.issue === 5)!;
    expect(comment.body).toContain("<!-- agentrelay:plan -->");
    expect(comment.body).toContain("```mermaid");
    expect(comment.body).toContain("| `ws_a` | `main` | `main` | yes | 1 |");
    expect(comment.body).toContain("integration branch, `agentrelay/diamond/<workstream>/integration`");
    expect(comment.body).toContain("**Dispatched first**: `a` → `agentrelay/diamond/a`");
    const head2 = h.gh.commit("feature", {
      ".workflow/diamond.yaml": DIAMOND.replace("description: join", "description: joined"),
    });
    expect(await h.deliver("pull_request", pullRequestEvent("synchronize", 5, head2))).toBe(200);
    expect(h.gh.comments.filter((c) => c.issue === 5)).toHaveLength(1);
    expect(h.gh.dispatches).toEqual([]);
    expect(h.gh.branches.has("agentrelay-state/diamond")).toBe(false);
  });

  it("reports validation errors as annotations at file and line", async () => {
    h.gh.branches.set("feature", h.gh.branches.get("main")!);
    const head = h.gh.commit("feature", {
      ".workflow/bad.yaml": "name: bad\ntasks:\n  - id: a\n    description: x\n    dependencies: [nope]\n",
    });
    h.gh.openPull(6, "feature");
    await h.deliver("pull_request", pullRequestEvent("opened", 6, head));
    const check = h.gh.checkRuns[0]!;
    expect(check.conclusion).toBe("failure");
    expect(check.output!.annotations).toEqual([
      expect.objectContaining({
        path: ".workflow/bad.yaml",
        start_line: 5,
        annotation_level: "failure",
        message: expect.stringContaining("nope"),
      }),
    ]);
  });
});

describe("run on push", () => {
  it("an invalid graph gets a failed check run and changes nothing else", async () => {
    const sha = await h.pushGraph(
      ".workflow/bad.yaml",
      "name: bad\ntasks:\n  - id: a\n    description: x\n    dependancies: [b]\n",
    );
    expect(h.gh.checkRuns).toMatchObject([
      { name: "agentrelay / .workflow/bad.yaml", head_sha: sha, conclusion: "failure" },
    ]);
    expect(h.gh.checkRuns[0]!.output!.annotations).toEqual([
      expect.objectContaining({ start_line: 5, title: "tasks[0]" }),
    ]);
    expect(h.gh.log(/^(POST|PATCH|PUT|DELETE)/).filter((l) => !l.includes("access_tokens"))).toEqual([
      "POST /repos/octo/demo/check-runs",
    ]);
  });

  it("fits what it reports within GitHub's limits, on one line each (a 70,000-character id)", async () => {
    const id = `x${"y".repeat(70_000)}\u202e`;
    await h.pushGraph(".workflow/huge.yaml", `name: huge\ntasks:\n  - id: "${id}"\n    description: d\n`);
    const output = h.gh.checkRuns[0]!.output! as {
      title: string;
      summary: string;
      annotations: { message: string; title: string }[];
    };
    expect(output.summary.length).toBeLessThanOrEqual(65_536);
    const [annotation] = output.annotations;
    expect(Buffer.byteLength(annotation!.message)).toBeLessThanOrEqual(64 * 1024);
    // The id is shown by its start and end, so that the reason still reads; nothing unprintable is sent.
    expect(annotation!.message).toMatch(/^'xy+…\[\d+ characters\]…y+\\u\{202e\}' is not a safe id/);
    expect(annotation!.message.length).toBeLessThan(1000);
    expect(output.summary).toContain("is not a safe id");
    expect(output.summary).not.toContain("\u202e");
  });

  it("a cyberian workflow takes its params from the params file, and a missing one is named", async () => {
    const workflow =
      "name: hello\nparams:\n  topic:\n    range: string\n    required: true\nsubtasks:\n  write:\n    instructions: Write about {{topic}}.\n";
    await h.pushGraph(".workflow/hello.yaml", workflow);
    expect(h.gh.checkRuns[0]!.output!.summary).toContain(
      "params.topic: required param 'topic' has no value (give it in .workflow/hello.params.yaml",
    );
    await h.pushGraph(".workflow/hello.yaml", workflow, { ".workflow/hello.params.yaml": "topic: tides\n" });
    const state = h.gh.state("hello/1") as unknown as { source: { params: object } };
    expect(state.source.params).toEqual({ topic: "tides" });
    expect(h.gh.dispatches).toHaveLength(1);
  });
});

describe("job endpoints", () => {
  it("mints one token per attempt, scoped to the repository and the task's tier", async () => {
    await h.pushGraph(".workflow/tiers.yaml", TIERS);
    const byTask = Object.fromEntries(h.gh.dispatches.map((d) => [d.inputs.task, d]));
    for (const task of ["reader", "writer", "admin"]) {
      const d = byTask[task]!;
      const oidc = await h.oidc({ run_id: String(d.runId) });
      const answer = await h.call("/agentrelay/token", { run: "tiers/1", task, attempt: 1 }, oidc);
      expect(answer.status).toBe(200);
      expect(answer.body.token).toMatch(/^ghs_/);
      // Answered once: a replayed request gets nothing.
      expect((await h.call("/agentrelay/token", { run: "tiers/1", task, attempt: 1 }, oidc)).status).toBe(
        409,
      );
    }
    expect(h.gh.tokens.filter((t) => t.repositories.length)).toEqual([
      { repositories: ["demo"], permissions: { contents: "read", pull_requests: "read", metadata: "read" } },
      {
        repositories: ["demo"],
        permissions: { contents: "write", pull_requests: "write", metadata: "read" },
      },
      {
        repositories: ["demo"],
        permissions: {
          contents: "write",
          pull_requests: "write",
          metadata: "read",
          issues: "write",
          checks: "read",
          actions: "read",
        },
      },
    ]);
    for (const t of h.gh.tokens)
      for (const forbidden of ["workflows", "administration", "secrets"])
        expect(t.permissions).not.toHaveProperty(forbidden);
  });

  it("gives the job that took an attempt's token a push-only token again while it runs, and no one else", async () => {
    await h.pushGraph(".workflow/tiers.yaml", TIERS);
    const byTask = Object.fromEntries(h.gh.dispatches.map((d) => [d.inputs.task, d]));
    const writer = byTask.writer!;
    let key: Record<string, string> = {};
    const ask = async (task: string, runId: number, headers = key) =>
      h.call(
        "/agentrelay/push-token",
        { run: "tiers/1", task, attempt: 1 },
        await h.oidc({ run_id: String(runId) }),
        headers,
      );
    // Before the attempt took its first token, there is nothing to renew.
    expect((await ask("writer", writer.runId)).body.error).toBe(
      "attempt 1 of writer has not taken its first token",
    );
    const first = await h.call(
      "/agentrelay/token",
      { run: "tiers/1", task: "writer", attempt: 1 },
      await h.oidc({ run_id: String(writer.runId) }),
    );
    expect(first.body.report_key).toMatch(/^[\w-]{43}$/);
    // A process of the same job with an OIDC token of its own, but not the runner's key, gets nothing.
    const before = h.gh.tokens.length;
    const forgeries: Record<string, string>[] = [{}, { "x-agentrelay-report-key": "x".repeat(43) }];
    for (const forged of forgeries) {
      const refused = await ask("writer", writer.runId, forged);
      expect(refused).toMatchObject({
        status: 403,
        body: {
          error:
            "this request does not carry the report key of attempt 1 of writer: only the runner that took the attempt's first token may push or report",
        },
      });
    }
    expect(h.gh.tokens.length).toBe(before);
    key = keyOf(first.body);
    const minted = h.gh.tokens.length;
    // Asked again at push time (any number of times while the attempt runs): a token that only pushes.
    for (let i = 0; i < 2; i++) {
      const again = await ask("writer", writer.runId);
      expect(again.status).toBe(200);
      expect(again.body.token).toMatch(/^ghs_/);
    }
    expect(h.gh.tokens.slice(minted)).toEqual([
      { repositories: ["demo"], permissions: { contents: "write", metadata: "read" } },
      { repositories: ["demo"], permissions: { contents: "write", metadata: "read" } },
    ]);
    // Another job, even one of the same run of the graph, gets nothing.
    const stolen = await ask("writer", byTask.reader!.runId);
    expect(stolen.status).toBe(403);
    expect(stolen.body.error).toBe(
      `attempt 1 of writer belongs to workflow run ${writer.runId}, not to this job's run ${byTask.reader!.runId}`,
    );
    // A read_only task pushes nothing, so it gets no push token.
    const reader = await h.call(
      "/agentrelay/token",
      { run: "tiers/1", task: "reader", attempt: 1 },
      await h.oidc({ run_id: String(byTask.reader!.runId) }),
    );
    expect(await ask("reader", byTask.reader!.runId, keyOf(reader.body))).toMatchObject({
      status: 403,
      body: { error: "reader is a read_only task: its attempts push nothing" },
    });
    // Once the attempt has reported, it is over: no token outlives it.
    const admin = await runJob(h, byTask.admin!);
    expect(admin.report.status).toBe(200);
    expect((await ask("admin", byTask.admin!.runId, keyOf(admin.token))).status).toBe(409);
    const pushOnly = h.gh.tokens.filter((t) => !("pull_requests" in t.permissions) && t.repositories.length);
    expect(pushOnly).toHaveLength(2);
  });

  // The app binds an attempt when its job takes the first token, not at dispatch (a state write fewer
  // per attempt): until then a job is known by its run-name, whether GitHub returned a run id or not.
  it.each([
    ["with the run id GitHub returned for the dispatch", true],
    ["where GitHub returns no run id", false],
  ])(
    "binds each attempt to the job bearing its run-name, %s: another job's request is refused and changes nothing",
    async (_, details) => {
      h.gh.runDetails = details;
      await h.pushGraph(".workflow/tiers.yaml", TIERS);
      const byTask = Object.fromEntries(h.gh.dispatches.map((d) => [d.inputs.task, d]));
      const readerJob = await h.oidc({ run_id: String(byTask.reader!.runId) });
      const before = JSON.stringify(h.gh.state("tiers/1"));
      const stolen = await h.call(
        "/agentrelay/token",
        { run: "tiers/1", task: "writer", attempt: 1 },
        readerJob,
      );
      expect(stolen.status).toBe(403);
      expect(stolen.body.error).toBe(
        `this job's run ${byTask.reader!.runId} was not dispatched for attempt 1 of writer (it bears another run-name)`,
      );
      expect(JSON.stringify(h.gh.state("tiers/1"))).toBe(before);
      expect(h.gh.tokens.filter((t) => t.repositories.length)).toEqual([]);
      // The writer's own job still gets its token.
      const writerJob = await h.oidc({ run_id: String(byTask.writer!.runId) });
      const own = await h.call(
        "/agentrelay/token",
        { run: "tiers/1", task: "writer", attempt: 1 },
        writerJob,
      );
      expect(own.status).toBe(200);
      expect(own.body.tier).toBe("standard");
    },
  );

  it("refuses forged tokens, other workflows and other branches, and a report from another job", async () => {
    await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
    const d = h.gh.dispatches[0]!;
    const ask = (token: string | null) =>
      h.call("/agentrelay/token", { run: "diamond/1", task: "a", attempt: 1 }, token);
    expect((await ask(null)).status).toBe(401);
    const forged = (await h.oidc()).replace(/\.[^.]+$/, ".AAAA");
    expect((await ask(forged)).status).toBe(401);
    expect(
      (
        await ask(
          await h.oidc({
            job_workflow_ref: "octo/demo/.github/workflows/agentrelay-task.yml@refs/heads/evil",
          }),
        )
      ).status,
    ).toBe(403);
    expect((await ask(await h.oidc({ event_name: "push" }))).status).toBe(403);
    expect((await ask(await h.oidc({ repository: "octo/other" }))).status).not.toBe(200);
    expect(h.gh.tokens.filter((t) => t.repositories.length)).toEqual([]);
    const { report } = await runJob(h, d);
    expect(report.status).toBe(200);
    const stranger = await h.oidc({ run_id: "999" });
    const result = {
      outcome: "failed",
      noPr: false,
      reason: "sabotage",
      concerns: [],
      opsConcerns: [],
      summary: null,
      outputs: [],
      costMicros: 0,
      turns: 0,
      gates: [],
      commit: null,
    };
    const second = await h.call(
      "/agentrelay/report",
      { run: "diamond/1", task: "a", attempt: 1, result },
      stranger,
    );
    expect(second).toMatchObject({ status: 403, body: { error: "attempt 1 of a belongs to another job" } });
    expect(
      (await h.call("/agentrelay/report", { run: "diamond/1", task: "a", attempt: 1, result: {} }, stranger))
        .status,
    ).toBe(400);
    expect(h.gh.state("diamond/1").tasks.a!.status).toBe("merged");
  });

  it("refuses a report from the attempt's own job that lacks the runner's report key, which is handed out once", async () => {
    await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
    const d = h.gh.dispatches[0]!;
    const attempt = { run: "diamond/1", task: "a", attempt: 1 };
    const grant = await h.call("/agentrelay/token", attempt, await h.oidc({ run_id: String(d.runId) }));
    expect(grant.status).toBe(200);
    // A process planted in the same job (a git hook, an agent's leftover) gets the job's OIDC token.
    const planted = await h.oidc({ run_id: String(d.runId) });
    expect(await h.call("/agentrelay/token", attempt, planted)).toMatchObject({
      status: 409,
      body: { error: "attempt 1 of a already has its token" },
    });
    const before = JSON.stringify(h.gh.state("diamond/1"));
    const forged = {
      ...attempt,
      result: {
        outcome: "succeeded",
        noPr: true,
        reason: null,
        concerns: [],
        opsConcerns: [],
        summary: "all good",
        outputs: [],
        costMicros: 0,
        turns: 0,
        gates: [],
        commit: null,
      },
    };
    const wrongKey = { "x-agentrelay-report-key": `${String(grant.body.report_key).slice(1)}x` };
    for (const headers of [{}, wrongKey]) {
      expect(await h.call("/agentrelay/report", forged, planted, headers)).toMatchObject({
        status: 403,
        body: {
          error:
            "this request does not carry the report key of attempt 1 of a: only the runner that took the attempt's first token may push or report",
        },
      });
    }
    expect(JSON.stringify(h.gh.state("diamond/1"))).toBe(before);
    // The runner's own report, with the key, is applied.
    const own = await h.call("/agentrelay/report", forged, planted, keyOf(grant.body));
    expect(own.status).toBe(200);
    expect(h.gh.state("diamond/1").tasks.a!.status).not.toBe("running");
  });

  it("refuses an oversized or malformed body", async () => {
    const oidc = await h.oidc();
    expect((await h.call("/agentrelay/report", "x".repeat(1024 * 1024 + 10), oidc)).status).toBe(413);
    expect((await h.call("/agentrelay/report", "{not json", oidc)).status).toBe(400);
  });
});

describe("webhook ingress", () => {
  it("rejects a forged signature with no side effect, logging one line and none of the body", async () => {
    const before = h.gh.branches.get("main")!;
    const after = h.gh.commit("main", { ".workflow/diamond.yaml": DIAMOND });
    const status = await h.deliver(
      "push",
      pushPayload(h.gh, before, after, { added: [".workflow/diamond.yaml"] }),
      { secret: "wrong", id: "forged-1" },
    );
    expect(status).toBe(400);
    expect(h.gh.calls).toEqual([]);
    const lines = h.logs.filter((l) => l.includes("forged-1"));
    expect(lines).toEqual([
      "webhook forged-1 (push): refused 400: the signature does not match the body (check the app's webhook secret)",
    ]);
    expect(h.logs.join("\n")).not.toContain(after);
  });

  it("caps a body before reading it: 30 MB is refused at once, declared or streamed", async () => {
    const big = "x".repeat(30 * 1024 * 1024);
    const headers = {
      "x-github-event": "push",
      "x-github-delivery": "big-1",
      "x-hub-signature-256": "sha256=00",
    };
    const declared = await fetch(`${h.url}/api/github/webhooks`, { method: "POST", headers, body: big });
    expect(declared.status).toBe(413);
    const stream = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 30; i++) controller.enqueue(new TextEncoder().encode(big.slice(0, 1024 * 1024)));
        controller.close();
      },
    });
    const streamed = await fetch(`${h.url}/api/github/webhooks`, {
      method: "POST",
      headers: { ...headers, "x-github-delivery": "big-2" },
      body: stream,
      duplex: "half",
    } as RequestInit).catch(() => null);
    // The app answers 413 and stops reading; the client may see the answer or a closed connection.
    if (streamed) expect(streamed.status).toBe(413);
    expect(h.logs.filter((l) => l.startsWith("webhook big-"))).toEqual([
      "webhook big-1 (push): refused 413: the body is over the 26214400-byte limit",
      "webhook big-2 (push): refused 413: the body is over the 26214400-byte limit",
    ]);
    expect(h.gh.calls).toEqual([]);
  });

  it("answers a signed payload it cannot read with 400 and the field at fault, never a 500", async () => {
    expect(await h.deliver("push", {}, { raw: "null" })).toBe(400);
    const noCommits = {
      ref: "refs/heads/main",
      after: "a".repeat(40),
      deleted: false,
      repository: repository(h.gh),
      sender: user("alice"),
    };
    expect(await h.deliver("push", noCommits, { id: "no-commits" })).toBe(400);
    expect(h.logs).toContain(
      "webhook no-commits (push): refused 400: push payload: commits: Invalid input: expected array, received undefined",
    );
    expect(
      await h.deliver("issue_comment", {
        action: "created",
        repository: repository(h.gh),
        sender: user("a"),
      }),
    ).toBe(400);
    expect(h.gh.calls).toEqual([]);
  });
});

describe("slash commands", () => {
  // GitHub gives every comment an id of its own (commands are applied once per comment and command).
  let id = 77;
  const comment = (body: string, login: string, type: "User" | "Bot" = "User") =>
    issueComment(h, body, login, { type, id: id++ });

  it("accepts commands from writers, ignores others (writing nothing) and bots", async () => {
    await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
    await runJob(h, h.gh.dispatches[0]!, { outcome: "failed", reason: "broken" });
    h.gh.permissions.set("alice", "write");
    h.gh.permissions.set("mallory", "read");
    // Someone without write access costs no write: no answer, no reaction (security case 73).
    const writes = () => h.gh.calls.filter((c) => isWrite(c)).length;
    const before = writes();
    await comment("/agentrelay retry a", "mallory");
    expect(writes()).toBe(before);
    expect(h.gh.reactions).toEqual([]);
    expect(h.gh.dispatches).toHaveLength(1);
    await comment("/agentrelay retry a", "renovate[bot]", "Bot");
    expect(h.gh.dispatches).toHaveLength(1);
    await comment("```\n/agentrelay retry a\n```", "alice");
    expect(h.gh.dispatches).toHaveLength(1);
    await comment("/agentrelay retry a", "alice");
    expect(h.gh.dispatches.map((d) => `${d.inputs.task}/${d.inputs.attempt}`)).toEqual(["a/1", "a/2"]);
    expect(h.gh.reactions.at(-1)).toEqual({ comment: 80, content: "eyes" });
    expect(h.gh.comments.at(-1)!.body).toMatch(/retry/i);
    await comment("/agentrelay cancel", "alice");
    expect(h.gh.workflowRuns.get(h.gh.dispatches[1]!.runId)!.conclusion).toBe("cancelled");
  });
});

describe("faults", () => {
  it("does not count a fork's PR that borrows a task branch's name", async () => {
    await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
    const before = JSON.stringify(h.gh.state("diamond/1"));
    const status = await h.deliver("pull_request", {
      action: "closed",
      number: 99,
      pull_request: {
        number: 99,
        html_url: "https://github.com/octo/demo/pull/99",
        merged: true,
        head: { ref: "agentrelay/diamond/a", sha: "f".repeat(40), repo: { full_name: "mallory/demo" } },
        base: { ref: "agentrelay/diamond/ws_a/integration" },
      },
      repository: repository(h.gh),
      sender: user("mallory"),
    });
    expect(status).toBe(200);
    expect(JSON.stringify(h.gh.state("diamond/1"))).toBe(before);
  });

  it("a 5xx while opening a task PR loses nothing: the reconciler finishes the work", async () => {
    await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
    let failures = 0;
    h.gh.fault = (call) =>
      call.method === "POST" && call.path.endsWith("/pulls") && failures++ === 0
        ? [502, { message: "Bad Gateway" }]
        : null;
    const { report } = await runJob(h, h.gh.dispatches[0]!);
    expect(report.status).toBe(200); // the result is recorded; the PR is owed
    expect(h.gh.pulls).toEqual([]);
    expect(h.gh.state("diamond/1").tasks.a!.status).toBe("pr_open");
    // /agentrelay status runs the reconciler, which opens and merges the PR the lost write owed.
    h.gh.permissions.set("alice", "write");
    await issueComment(h, "/agentrelay status", "alice", { id: 1 });
    expect(h.gh.pulls.filter((p) => p.head === "agentrelay/diamond/a")).toMatchObject([{ merged: true }]);
    expect(h.gh.dispatches.map((d) => d.inputs.task)).toEqual(["a", "b", "c"]);
  });
});

describe("/agentrelay run", () => {
  it("starts a cyberian workflow with params from the comment, naming a missing one", async () => {
    const workflow =
      "name: hello\nparams:\n  topic:\n    range: string\n    required: true\nsubtasks:\n  write:\n    instructions: Write about {{topic}}.\n";
    h.gh.commit("main", { ".workflow/hello.yaml": workflow });
    h.gh.permissions.set("alice", "write");
    const comment = (body: string) =>
      issueComment(h, body, "alice", { id: 5, issue: { number: 99, body: "" } });
    await comment("/agentrelay run .workflow/hello.yaml");
    expect(h.gh.comments.at(-1)!.body).toContain("params.topic: required param 'topic' has no value");
    expect(h.gh.dispatches).toEqual([]);
    await comment("/agentrelay run .workflow/hello.yaml tides");
    expect(h.gh.comments.at(-1)!.body).toContain(
      "Usage: `/agentrelay run .workflow/FILE.yaml key=value ...`",
    );
    await comment("/agentrelay run .workflow/hello.yaml topic=tides");
    expect(h.gh.comments.at(-1)!.body).toContain("Run `hello/1` started.");
    expect((h.gh.state("hello/1") as unknown as { source: { params: object } }).source.params).toEqual({
      topic: "tides",
    });
    expect(h.gh.dispatches).toHaveLength(1);
  });
});

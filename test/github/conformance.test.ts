/**
 * The conformance suite (src/github/conformance/) against the fake GitHub. `agentrelay conformance`
 * runs end to end against the stand-in served over HTTP, exactly as against api.github.com (its
 * base URL aside): every case the API shows is observed as documented, its table printed, its scratch
 * removed. The fake may never be more permissive than a case: loosened on one rule, the suite says
 * so. The event cases, which need Actions, are held against the fake's event rules.
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startsWorkflows, workflowRunStarts } from "../../harness/fake-events.ts";
import { FakeGitHub } from "../../harness/fake-github.ts";
import { type Standin, startStandin } from "../../harness/standin.ts";
import { e2eAgent } from "../../harness/e2e-agent.ts";
import { main } from "../../src/cli/main.ts";
import type { GitHubClient } from "../../src/github/client.ts";
import { conformanceClient } from "../../src/github/conformance/client.ts";
import { EVENT_CASES } from "../../src/github/conformance/event-cases.ts";
import { CASES, departures, runConformance } from "../../src/github/conformance/runner.ts";
import { REPO_ROOT } from "../support/fixtures.ts";

/** The suite's client, answered in process by the fake, pacing its writes on the fake's clock. */
const client = (gh: FakeGitHub, token: string): GitHubClient =>
  conformanceClient(token, "https://api.github.com", {
    budget: token,
    clock: { now: gh.clock.now, sleep: gh.clock.sleep },
    fetch: gh.fetch,
    throttle: false,
  });

let standin: Standin | null = null;
afterEach(async () => {
  const closing = standin;
  standin = null;
  if (!closing) return;
  // The over-limit requests are the suite's own, on purpose: what GitHub refuses, refused.
  const { violations } = closing.gh;
  expect(violations.filter((v) => !/too long|more than 65535|more than 50 items/.test(v))).toEqual([]);
  violations.length = 0;
  await closing.close();
});

/** `agentrelay conformance` with a person's and a server token, against `url`; its exit code and output. */
async function conformance(url: string, env: Record<string, string> = {}, args: string[] = []) {
  const out: string[] = [];
  const err: string[] = [];
  const values: Record<string, string> = {
    GITHUB_TOKEN: "gho_person-token-never-printed",
    AGENTRELAY_CONFORMANCE_SERVER_TOKEN: `ghs_${"s".repeat(36)}`,
    AGENTRELAY_GITHUB_PACING: "off",
    ...env,
  };
  const saved = Object.fromEntries(Object.keys(values).map((k) => [k, process.env[k]]));
  Object.assign(process.env, values);
  try {
    const code = await main(["conformance", "--repo", "octo/demo", "--api-url", url, ...args], {
      out: (t) => out.push(t),
      err: (t) => err.push(t),
    });
    return { code, out: out.join("\n"), err: err.join("\n") };
  } finally {
    for (const [key, value] of Object.entries(saved))
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
  }
}

describe("agentrelay conformance against the stand-in over HTTP", () => {
  it("observes every case it can as documented, prints the table and removes its scratch", async () => {
    standin = await startStandin({
      script: e2eAgent(),
      orchestrator: "workflow",
      jobs: "scripted",
      memory: true,
    });
    const gh = standin.gh;
    // A server with no rate limits, which says so (AGENTRELAY_GITHUB_PACING=off) as the stand-in's
    // orchestrator runs do; the pacing under GitHub's limits is the in-process case's below.
    gh.limits.rate = false;
    const branches = new Set([...gh.branches].map(([name]) => name));
    const files = gh.store.files(gh.branches.get("main")!);
    const { code, out: text, err } = await conformance(standin.url, {}, ["--actions"]);
    console.log(text, err);
    expect(err).not.toMatch(/error|not cleaned/i);
    expect(code).toBe(0);
    // One row per case: each observed as expected but those only a person can observe.
    const rows = text.split("\n").filter((l) => /^\| [a-z]+\./.test(l));
    expect(rows).toHaveLength(CASES.length);
    for (const c of CASES)
      expect(rows.find((r) => r.startsWith(`| ${c.id} |`))).toMatch(
        c.run ? /\| as expected: [^|]+\|$/ : /\| not run: needs Actions minutes[^|]+by hand/,
      );
    expect(text).toMatch(
      new RegExp(
        `${CASES.filter((c) => c.run).length} of ${CASES.length} cases observed on octo/demo: \\d+ as documented; \\d+ not run`,
      ),
    );
    expect(`${text}\n${err}`).not.toContain("person-token-never-printed");
    // The scratch is gone: no branch, rule or open PR left; the default branch's files as they were.
    expect([...gh.branches].map(([name]) => name).filter((b) => !branches.has(b))).toEqual([]);
    expect(gh.settings.rules).toEqual([]);
    expect(gh.pulls.filter((p) => p.state === "open")).toEqual([]);
    expect(gh.store.files(gh.branches.get("main")!)).toEqual(files);
  });

  it("leaves the default branch alone without --actions, and says how to opt in", async () => {
    const gh = new FakeGitHub();
    const main = gh.branches.get("main");
    const { rows } = await runConformance({
      person: client(gh, "ghp_person"),
      server: client(gh, "ghs_server"),
      repository: "octo/demo",
      id: "no-actions",
      only: (c) => c.area === "events",
    });
    const why = rows.map((r) => ("notRun" in r.observation ? r.observation.notRun : "run"));
    expect(why.filter((w) => /opt in with --actions$/.test(w))).toHaveLength(4);
    expect(why.filter((w) => /observe by hand/.test(w))).toHaveLength(rows.length - 4);
    expect(gh.branches.get("main")).toBe(main);
    expect(gh.workflowRuns.size).toBe(0);
  });
});

describe("agentrelay conformance when something fails", () => {
  it("removes its scratch all the same and says in one line what to do", async () => {
    standin = await startStandin({
      script: e2eAgent(),
      orchestrator: "workflow",
      jobs: "scripted",
      memory: true,
    });
    const gh = standin.gh;
    gh.limits.rate = false;
    const before = [...gh.branches].map(([name]) => name);
    // The token is revoked half-way: GitHub answers 401 from the fifth pull request on.
    let pulls = 0;
    gh.fault = (call) =>
      call.method === "POST" && call.path === "/repos/octo/demo/pulls" && ++pulls >= 5
        ? [401, { message: "Bad credentials" }]
        : null;
    const { code, out, err } = await conformance(standin.url);
    expect(code).toBe(1);
    expect(out).toBe("");
    expect(err.split("\n").at(-1)).toBe(
      "agentrelay: GitHub refused the token (401): set a valid GITHUB_TOKEN, or run `gh auth login`",
    );
    expect([...gh.branches].map(([name]) => name)).toEqual(before);
    expect(gh.settings.rules).toEqual([]);
    expect(gh.pulls.filter((p) => p.state === "open")).toEqual([]);
  });

  it("says in one line that it needs a person's token, or GitHub, and makes nothing", async () => {
    const server = await conformance("http://127.0.0.1:9", { GITHUB_TOKEN: `ghs_${"t".repeat(36)}` });
    expect(server.code).toBe(1);
    expect(server.err).toMatch(
      /^agentrelay: the token is a server-to-server one \(ghs_\): give a person's token/m,
    );
    // A port nothing listens on.
    const closed = createServer();
    await new Promise<void>((done) => closed.listen(0, "127.0.0.1", done));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((done) => closed.close(done));
    const offline = await conformance(`http://127.0.0.1:${port}`);
    expect(offline.code).toBe(1);
    expect(offline.err.split("\n").at(-1)).toBe(
      `agentrelay: GitHub could not be reached (127.0.0.1:${port}: nothing answers at that address): connect, then run it again`,
    );
  });
});

describe("the fake is never more permissive than the suite", () => {
  it("paces its writes under GitHub's limits and finds the fake as documented", async () => {
    const gh = new FakeGitHub();
    gh.settings.token = "github_token";
    const { rows } = await runConformance({
      person: client(gh, "ghp_person"),
      server: client(gh, "ghs_server"),
      repository: "octo/demo",
      id: "paced",
      only: (c) => c.area === "settings" || c.area === "merges",
    });
    expect(departures(rows).map((r) => r.case.id)).toEqual([]);
    expect(rows.length).toBeGreaterThan(8);
  });

  it("says so when one of the fake's rules is loosened (workflow files changed without the permission)", async () => {
    const gh = new FakeGitHub();
    gh.settings.token = "github_token";
    gh.settings.workflowsPermission = true; // as if GITHUB_TOKEN could hold `workflows`
    const { rows } = await runConformance({
      person: client(gh, "ghp_person"),
      server: client(gh, "ghs_server"),
      repository: "octo/demo",
      id: "loose",
      only: (c) => c.id.startsWith("settings.workflows"),
    });
    expect(
      departures(rows).map((r) => [r.case.id, "verdict" in r.observation && r.observation.verdict]),
    ).toEqual([
      ["settings.workflows.ref-update", "more permissive"],
      ["settings.workflows.merge", "more permissive"],
    ]);
  });

  it("names the workflow scope a person's token lacks, and goes on without the Actions cases", async () => {
    const gh = new FakeGitHub();
    gh.settings.token = "github_token";
    // GitHub refuses a person's token without the `workflow` scope a commit of workflow files to main.
    gh.fault = (call) =>
      call.method === "PATCH" && call.path.endsWith("/git/refs/heads/main")
        ? [404, { message: "Not Found" }]
        : null;
    const main = gh.branches.get("main");
    const { rows, leftOver } = await runConformance({
      person: client(gh, "ghp_person"),
      server: client(gh, "ghs_server"),
      repository: "octo/demo",
      id: "scope",
      only: (c) => c.needs.includes("actions") && c.run !== undefined,
      actions: { pollMs: 0, timeoutMs: 1_000, settleMs: 0 },
    });
    expect(rows.map((r) => "notRun" in r.observation && r.observation.notRun)).toEqual(
      rows.map(
        () =>
          "the person's token may not push workflow files: add the workflow scope (`gh auth refresh -s workflow`)",
      ),
    );
    expect(rows.length).toBe(4);
    expect(leftOver).toEqual([]);
    expect(gh.branches.get("main")).toBe(main);
  });

  it("holds the fake's event rules to each event case", () => {
    const seen: string[] = [];
    for (const c of EVENT_CASES) {
      for (const p of c.starts ?? []) {
        const options = {
          ...(p.action ? { action: p.action } : {}),
          ...(p.checkSuiteApp ? { checkSuiteApp: p.checkSuiteApp } : {}),
        };
        seen.push(
          `${c.id} ${p.event}.${p.action ?? ""} by ${p.actor}: ${startsWorkflows(p.event, p.actor, options)}`,
        );
        expect(
          startsWorkflows(p.event, p.actor, options),
          `${c.id}: ${p.event} ${p.action ?? ""} by ${p.actor}`,
        ).toBe(p.expect);
      }
      for (const p of c.chain ?? [])
        expect(
          workflowRunStarts(
            { workflows: ["A"] },
            { workflow: "A", headBranch: "main", depth: p.depth, actor: p.actor },
          ),
          `${c.id}: a run ${p.depth} levels deep by ${p.actor}`,
        ).toBe(p.expect);
    }
    expect(seen.length).toBeGreaterThan(10);
  });

  it("is listed case by case in docs/github.md, with what has been observed on github.com", () => {
    const docs = readFileSync(join(REPO_ROOT, "docs/github.md"), "utf8");
    const listed = new Set([...docs.matchAll(/^- `([a-z-]+\.[a-z.-]+)` \(/gm)].map((m) => m[1]));
    expect(CASES.filter((c) => !listed.has(c.id)).map((c) => c.id)).toEqual([]);
  });

  it("gives every case an id of its own, a rule, an expectation and a citation", () => {
    expect(new Set(CASES.map((c) => c.id)).size).toBe(CASES.length);
    for (const c of CASES) {
      expect(c.rule.length, c.id).toBeGreaterThan(20);
      expect(c.expected, c.id).not.toBe("");
      expect(c.citation, c.id).toMatch(/https:\/\/|#\d+|github-audit/);
      expect(Boolean(c.run) || c.needs.includes("actions"), c.id).toBe(true);
    }
  });
});

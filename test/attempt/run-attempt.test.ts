import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseReview } from "../../src/attempt/review.ts";
import { runAttempt } from "../../src/attempt/run-attempt.ts";
import { runGate } from "../../src/attempt/gates.ts";
import { git } from "../../src/attempt/git.ts";
import {
  phased,
  promptOf,
  type ScriptedModelServer,
  sequence,
  startScriptedModel,
  userPrompts,
} from "../../src/scripted/model-server.ts";
import { attemptSetup, read } from "../support/attempt.ts";
import { until, WAIT_MS } from "../../harness/patience.ts";

const GRAPH = `name: g
tasks:
  - id: greet
    description: Create greet.txt saying hello.
  - id: gated
    description: Make value.txt say ok.
    completion_gate: test "$(cat value.txt)" = ok
    max_gate_attempts: 3
`;

let server: ScriptedModelServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const bash = (command: string) => ({ name: "Bash", input: { command, description: command.slice(0, 40) } });

describe("a task attempt with the real agent", () => {
  it("succeeds: the agent's work is committed to the task branch and its hand-back is read", async () => {
    server = await startScriptedModel(
      sequence(
        [
          bash("printf 'hello\\n' > greet.txt"),
          bash(
            'agentrelay-summary --message "Wrote greet.txt." && agentrelay-declare --path greet.txt --action created --category docs',
          ),
          bash(
            'agentrelay-ops-concern --message "no tests here" && agentrelay-complete --title "Add greet.txt"',
          ),
        ],
        "Done.",
      ),
    );
    const ctx = await attemptSetup(GRAPH, "greet", server.url);
    const result = await runAttempt(ctx);
    expect(result).toMatchObject({
      outcome: "succeeded",
      noPr: false,
      reason: null,
      summary: "Wrote greet.txt.",
      opsConcerns: ["no tests here"],
      outputs: [{ path: "greet.txt", action: "created", category: "docs" }],
      turns: 4,
    });
    expect(result.commit).toBe(await git(ctx.repoDir, ["rev-parse", "agentrelay/g/greet"]));
    expect(await git(ctx.repoDir, ["show", "--stat", "--format=%s", "HEAD"])).toContain("greet: attempt 1");
    expect(await git(ctx.repoDir, ["show", "HEAD:greet.txt"])).toBe("hello");
    // The protocol files live outside the checkout and were not committed.
    expect(read(ctx.workDir, "instructions.md")).toContain("# Instructions for Task greet");
    expect(existsSync(join(ctx.repoDir, "instructions.md"))).toBe(false);
    // The agent was told where its instructions are.
    expect(userPrompts(server.requests.at(-1)!)[0]).toContain(
      `Read ${join(ctx.workDir, "instructions.md")} and follow the steps exactly.`,
    );
    expect(ctx.lines).toContain("tool: Bash printf 'hello\\n' > greet.txt");
  });

  it("gives a failing gate's output back to the same session until the gate passes", async () => {
    const isFeedback = (p: string) => p.startsWith("The completion gate");
    server = await startScriptedModel(
      phased(
        [
          { steps: [bash("echo wrong > value.txt && agentrelay-complete")], final: "Done." },
          { steps: [bash("echo still-wrong > value.txt && agentrelay-complete")], final: "Fixed, I think." },
          { steps: [bash("echo ok > value.txt && agentrelay-complete")], final: "Fixed." },
        ],
        isFeedback,
      ),
    );
    const ctx = await attemptSetup(GRAPH, "gated", server.url);
    const result = await runAttempt(ctx);
    expect(result.outcome).toBe("succeeded");
    expect(result.gates).toEqual([
      { n: 1, passed: false },
      { n: 2, passed: false },
      { n: 3, passed: true },
    ]);
    const feedback = userPrompts(server.requests.at(-1)!).filter(isFeedback);
    expect(feedback).toHaveLength(2);
    expect(feedback[0]).toContain('The completion gate `test "$(cat value.txt)" = ok` failed (run 1 of 3)');
    expect(feedback[0]).toContain("[agentrelay] exit code 1");
    // The resumed session carried the whole conversation: the first prompt is still there.
    expect(userPrompts(server.requests.at(-1)!)[0]).toContain("instructions.md");
    expect(await git(ctx.repoDir, ["show", "HEAD:value.txt"])).toBe("ok");
  });

  it("fails when the gate is still failing after max_gate_attempts", async () => {
    server = await startScriptedModel(
      phased([{ steps: [bash("echo no > value.txt && agentrelay-complete")], final: "Done." }], (p) =>
        p.startsWith("The completion gate"),
      ),
    );
    const ctx = await attemptSetup(
      GRAPH.replace("max_gate_attempts: 3", "max_gate_attempts: 2"),
      "gated",
      server.url,
    );
    const result = await runAttempt(ctx);
    expect(result).toMatchObject({
      outcome: "failed",
      reason: 'Completion gate failed after 2 attempt(s): test "$(cat value.txt)" = ok',
      gates: [
        { n: 1, passed: false },
        { n: 2, passed: false },
      ],
    });
    // The failed work is committed to the task branch, so that the job pushes it and a retry continues from it.
    expect(await git(ctx.repoDir, ["log", "-1", "--format=%H %s"])).toBe(
      `${result.commit} gated: attempt 1 (failed)`,
    );
    expect(read(join(ctx.workDir, "attempts", "1"), "gate_last_output.txt")).toContain("exit code 1");
  });

  it("reports the agent giving up, with its reason", async () => {
    server = await startScriptedModel(
      sequence([bash('agentrelay-failed --reason "greet.txt must not exist"')], "I cannot do this."),
    );
    const result = await runAttempt(await attemptSetup(GRAPH, "greet", server.url));
    expect(result).toMatchObject({
      outcome: "failed",
      reason: "the agent gave up: greet.txt must not exist",
      commit: null,
    });
  });

  it("completes without a PR when the agent finishes without changes", async () => {
    server = await startScriptedModel(
      sequence(
        [bash('agentrelay-summary --message "Nothing to change." && agentrelay-complete-no-pr')],
        "Done.",
      ),
    );
    const ctx = await attemptSetup(GRAPH, "gated", server.url);
    const result = await runAttempt(ctx);
    expect(result).toMatchObject({
      outcome: "succeeded",
      noPr: true,
      commit: null,
      gates: [],
      summary: "Nothing to change.",
    });
  });
});

describe("secrets in an attempt", () => {
  it("are masked in the log and in what the agent hands back", async () => {
    const token = `ghs_${"Zz9".repeat(14)}`;
    server = await startScriptedModel(
      sequence(
        [
          bash(
            `echo "my token is ${token}" && agentrelay-summary --message "used ${token}" && agentrelay-complete-no-pr`,
          ),
        ],
        `I printed ${token}.`,
      ),
    );
    const ctx = await attemptSetup(GRAPH, "greet", server.url);
    ctx.claude.env.GH_TOKEN = token;
    const result = await runAttempt(ctx);
    expect(result.summary).toBe("used ***");
    expect(ctx.lines.join("\n")).not.toContain(token);
    expect(ctx.lines.join("\n")).toContain("my token is ***");
  });
});

describe("self-review", () => {
  const REVIEWED = `name: g
tasks:
  - id: greet
    description: Create greet.txt saying hello with a newline.
    review:
      agent: {model: claude-haiku-4-5}
`;
  const isReview = (request: Parameters<typeof promptOf>[0]) =>
    promptOf(request).includes("You are reviewing the work of task");
  const primary = phased(
    [
      { steps: [bash("printf hello > greet.txt && agentrelay-complete")], final: "Done." },
      { steps: [bash("printf 'hello\\n' > greet.txt && agentrelay-complete")], final: "Fixed." },
    ],
    (p) => p.startsWith("A reviewer read your changes"),
  );

  it("sends the reviewer's findings back once; the fix is approved and committed", async () => {
    let reviews = 0;
    server = await startScriptedModel((request) =>
      isReview(request)
        ? {
            text:
              ++reviews === 1 ? "REVIEW: CHANGES\n- greet.txt must end with a newline" : "REVIEW: APPROVE",
          }
        : primary(request),
    );
    const ctx = await attemptSetup(REVIEWED, "greet", server.url);
    const result = await runAttempt(ctx);
    expect(result).toMatchObject({ outcome: "succeeded", concerns: [] });
    expect(await git(ctx.repoDir, ["show", "HEAD:greet.txt"])).toBe("hello");
    expect(reviews).toBe(2);
    const reviewRequests = server.requests.filter(isReview);
    expect(reviewRequests.every((r) => r.model === "claude-haiku-4-5")).toBe(true);
    expect(promptOf(reviewRequests[0]!)).toContain("+hello");
  });

  it("turns findings that remain after the fix into design concerns", async () => {
    server = await startScriptedModel((request) =>
      isReview(request) ? { text: "REVIEW: CHANGES\n- still not enough" } : primary(request),
    );
    const result = await runAttempt(await attemptSetup(REVIEWED, "greet", server.url));
    expect(result).toMatchObject({ outcome: "succeeded", concerns: ["review: still not enough"] });
  });

  it("only reviews from review_on_attempt on", async () => {
    server = await startScriptedModel((request) =>
      isReview(request) ? { text: "REVIEW: CHANGES\n- no" } : primary(request),
    );
    const ctx = await attemptSetup(
      REVIEWED.replace("agent: {model: claude-haiku-4-5}", "agent: null\n      review_on_attempt: 2"),
      "greet",
      server.url,
    );
    const result = await runAttempt(ctx);
    expect(result.concerns).toEqual([]);
    expect(server.requests.filter(isReview)).toEqual([]);
  });

  it("reads a verdict strictly", () => {
    expect(parseReview("Looks fine.\nREVIEW: APPROVE")).toEqual([]);
    expect(parseReview("**REVIEW: CHANGES**\n- a\n- b")).toEqual(["a", "b"]);
    expect(parseReview("I think it is good")).toEqual([
      "the reviewer gave no verdict (expected REVIEW: APPROVE or REVIEW: CHANGES)",
    ]);
  });
});

describe("a gate's deadline", () => {
  /**
   * A sleep no other process sleeps, to find it by (the gate may run in a PID namespace of its own,
   * where `$!` is not the pid the system knows it by).
   */
  const unique = (seconds: number) => `${seconds}.${process.pid}${Math.floor(Math.random() * 1e6)}`;
  /** Whether a `sleep` of that duration is still running (not a zombie waiting to be reaped). */
  const sleeping = (nap: string) =>
    spawnSync("pgrep", ["-f", `^sleep ${nap}$`], { encoding: "utf8" })
      .stdout.split("\n")
      .filter(Boolean)
      .some((pid) => {
        try {
          return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
        } catch {
          return false;
        }
      });

  it("holds when a grandchild keeps the output open: the gate's exit counts, what it left behind is stopped", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentrelay-gate-"));
    // The grandchild outlives any deadline: a gate that waited for its output would not pass.
    const nap = unique(3_600);
    const gate = await runGate(`sleep ${nap} & echo done; exit 0`, dir, WAIT_MS, process.env);
    expect(gate).toEqual({ passed: true, output: "done\n", timedOut: false });
    await until(() => !sleeping(nap), "what the gate left behind is stopped");
  });

  it("stops the whole gate at the deadline, grandchildren included", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentrelay-gate-"));
    // The gate itself never ends: only the deadline ends it, or the test is hung.
    const nap = unique(3_600);
    const gate = await runGate(`(sleep ${nap}; echo late) & sleep 3600`, dir, 1_000, process.env);
    expect(gate.passed).toBe(false);
    expect(gate.output).toContain("[agentrelay] the gate did not finish within 1 s");
    await until(() => !sleeping(nap), "the gate's grandchildren are stopped");
  });
});

// The next three stop Claude Code's own retries (minutes of them): they run the real CLI.
describe("an attempt whose credential is refused", () => {
  it("fails at once with the reason, instead of the agent retrying for minutes", async () => {
    const refusing = createServer((_req, res) => {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          type: "error",
          error: { type: "authentication_error", message: "invalid x-api-key" },
        }),
      );
    });
    await new Promise<void>((done) => refusing.listen(0, "127.0.0.1", done));
    try {
      const url = `http://127.0.0.1:${(refusing.address() as AddressInfo).port}`;
      const ctx = await attemptSetup(GRAPH, "greet", url, 1, "claude-code");
      // At once: Claude Code's own retries would take longer than the test's patience.
      const result = await runAttempt(ctx);
      // Not the task's failure: the attempt does not count (protocol/report.ts).
      expect(result).toMatchObject({
        outcome: "failed",
        agentUnavailable: true,
        reason: `Claude Code could not authenticate: the model API at ${url} (ANTHROPIC_BASE_URL) refused the credential (401: invalid x-api-key); replace the credential, then retry the task`,
      });

      const login = join(mkdtempSync(join(tmpdir(), "agentrelay-login-")), ".credentials.json");
      writeFileSync(
        login,
        JSON.stringify({ claudeAiOauth: { accessToken: "sk-ant-oat01-old", expiresAt: 1 } }),
      );
      const expired = await attemptSetup(GRAPH, "greet", url, 1, "claude-code");
      const { ANTHROPIC_API_KEY: _, ...env } = expired.claude.env;
      expired.claude.env = { ...env, AGENTRELAY_CLAUDE_LOGIN: login };
      expect((await runAttempt(expired)).reason).toBe(
        `Claude Code could not authenticate: the Claude login in ${login} has expired; run \`claude\` once to renew it, then retry the task`,
      );
    } finally {
      refusing.close();
    }
  });
});

describe("an attempt whose model API becomes unreachable", () => {
  it("stops after the grace, in words about the network, and does not count", async () => {
    // A port nothing listens on: every request of the agent fails to connect.
    const closed = createServer();
    await new Promise<void>((done) => closed.listen(0, "127.0.0.1", done));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((done) => closed.close(done));
    const ctx = { ...(await attemptSetup(GRAPH, "greet", url, 1, "claude-code")), unreachableGraceMs: 1_000 };
    const result = await runAttempt(ctx);
    expect(result).toMatchObject({
      outcome: "failed",
      agentUnavailable: true,
      reason: `the model API at ${url} (ANTHROPIC_BASE_URL) cannot be reached: the connection was refused; check that it is up (or unset ANTHROPIC_BASE_URL), then retry the task`,
    });
    expect(ctx.lines.join("\n")).not.toContain("inference gateway");
  });
});

describe("an attempt whose model API goes silent", () => {
  it("stops once a request went unanswered for the silence deadline, in words about the network, and does not count", async () => {
    // The API is there (it takes connections) and never answers a request: a network that dropped.
    const silent = createServer(() => {});
    await new Promise<void>((done) => silent.listen(0, "127.0.0.1", done));
    try {
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
      const ctx = {
        ...(await attemptSetup(GRAPH, "greet", url, 1, "claude-code")),
        silenceMs: 2_000,
        unreachableGraceMs: 1_000,
      };
      const result = await runAttempt(ctx);
      expect(result).toMatchObject({
        outcome: "failed",
        agentUnavailable: true,
        reason: `the model API at ${url} (ANTHROPIC_BASE_URL) cannot be reached: it sent nothing for 2 s after taking a request; check that it is up (or unset ANTHROPIC_BASE_URL), then retry the task`,
      });
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });
});

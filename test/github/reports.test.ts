/**
 * Workflow-only mode's reports: the orchestrator believes a report only from the run dispatched for
 * the attempt, when that run's report step succeeded, from its one artifact, naming that attempt.
 */
import { Octokit } from "@octokit/rest";
import { zipSync } from "fflate";
import { describe, expect, it } from "vitest";
import { FakeGitHub } from "../../harness/fake-github.ts";
import { DEFAULT_CONFIG, type GitHubClient, type RepoContext } from "../../src/github/client.ts";
import { REPORT_ARTIFACT, REPORT_STEP, reportOfRun } from "../../src/github/reports.ts";
import { REPORT_FILE } from "../../src/protocol/report.ts";
import { REPORT_MAC_FILE, reportMac } from "../../src/protocol/report-key.ts";

const attempt = { run: "g/1", task: "a", attempt: 1 };
const report = (about = attempt) => ({
  ...about,
  result: {
    outcome: "succeeded",
    noPr: false,
    reason: null,
    concerns: [],
    opsConcerns: [],
    summary: "did a",
    outputs: [],
    costMicros: 500_000,
    turns: 2,
    gates: [],
    commit: "a".repeat(40),
  },
});

function setUp(reportSecret: string | null = null) {
  const gh = new FakeGitHub();
  const ctx: RepoContext = {
    octokit: new Octokit({ request: { fetch: gh.fetch } }) as unknown as GitHubClient,
    owner: gh.owner,
    repo: gh.repo,
    defaultBranch: "main",
    config: { ...DEFAULT_CONFIG, workflow: { token: "github_token", reportSecret } },
    now: Date.now,
    log: () => undefined,
  };
  /** A task workflow run that ended: its report step's outcome, and what it uploaded (if anything). */
  const run = (step: "success" | "failure", ...uploads: Uint8Array[]) => {
    const id = gh.workflowRuns.size + 100;
    gh.workflowRuns.set(id, {
      id,
      display_title: "agentrelay g/1 a attempt 1",
      status: "completed",
      conclusion: step,
      jobs: [
        {
          name: "standard",
          steps: [
            { name: "Run the task", conclusion: "success" },
            { name: REPORT_STEP, conclusion: step },
          ],
        },
      ],
    });
    for (const zip of uploads) gh.uploadArtifact(id, REPORT_ARTIFACT, zip);
    return String(id);
  };
  const zip = (body: unknown, mac?: string) =>
    zipSync({
      [REPORT_FILE]: new TextEncoder().encode(JSON.stringify(body)),
      ...(mac === undefined ? {} : { [REPORT_MAC_FILE]: new TextEncoder().encode(mac) }),
    });
  return { gh, ctx, run, zip };
}

describe("a report read from the job's own run", () => {
  it("is the report the run's report step uploaded", async () => {
    const { ctx, run, zip } = setUp();
    const read = await reportOfRun(ctx, run("success", zip(report())), attempt);
    expect(read).toEqual({ report: expect.objectContaining({ task: "a", attempt: 1 }) });
  });

  it("is refused when the step failed: a process in the job uploaded an artifact of its name first", async () => {
    const { gh, ctx, run, zip } = setUp();
    const planted = zip({ ...report(), result: { ...report().result, costMicros: 0 } });
    const id = run("failure", planted);
    // The runner's own upload came second and was refused, as upload-artifact v4 refuses a name taken.
    expect(gh.uploadArtifact(Number(id), REPORT_ARTIFACT, zip(report()))).toBe(false);
    expect(await reportOfRun(ctx, id, attempt)).toEqual({
      reason: "the job ended without handing over its report",
    });
  });

  it("is refused when it speaks for another attempt than the one its run was dispatched for", async () => {
    const { ctx, run, zip } = setUp();
    const other = zip(report({ run: "g/1", task: "b", attempt: 1 }));
    expect(await reportOfRun(ctx, run("success", other), attempt)).toEqual({
      reason: "the job's report is about attempt 1 of b in g/1, not the attempt it was dispatched for",
    });
  });

  it("is refused, with the field at fault, when it is not a report", async () => {
    const { ctx, run, zip } = setUp();
    const read = await reportOfRun(
      ctx,
      run("success", zip({ ...report(), result: { outcome: "won" } })),
      attempt,
    );
    expect(read).toEqual({
      reason: expect.stringMatching(/^the job's report is invalid: result\.outcome: /),
    });
    expect(await reportOfRun(ctx, run("success", new Uint8Array([1, 2, 3])), attempt)).toEqual({
      reason: "the job's report artifact is not a zip archive",
    });
    expect(await reportOfRun(ctx, run("success"), attempt)).toEqual({
      reason: "the job's run holds 0 report artifacts, not one",
    });
  });
});

describe("a report bound to its key (the orchestrator holds AGENTRELAY_REPORT_SECRET)", () => {
  const secret = "sk-ant-api03-the-repository-credential";
  /** The id the next run() gets, which the runner put in its report's HMAC. */
  const nextRun = (gh: FakeGitHub) => String(gh.workflowRuns.size + 100);
  const signed = (body: unknown, runId: string, key = secret) =>
    reportMac(key, attempt, runId, JSON.stringify(body));

  it("is believed as the runner wrote it", async () => {
    const { gh, ctx, run, zip } = setUp(secret);
    const read = await reportOfRun(
      ctx,
      run("success", zip(report(), signed(report(), nextRun(gh)))),
      attempt,
    );
    expect(read).toEqual({ report: expect.objectContaining({ task: "a", attempt: 1 }) });
  });

  it("is refused, in one line, when its bytes changed after the runner wrote them, or it was made without the secret", async () => {
    const { gh, ctx, run, zip } = setUp(secret);
    const forged = { ...report(), result: { ...report().result, summary: "forged", costMicros: 0 } };
    const refused = {
      reason:
        "the job's report does not match its key: it was changed after the runner wrote it, so it is not believed",
    };
    // Rewritten after the runner wrote it: the HMAC is the runner's, of other bytes.
    expect(
      await reportOfRun(ctx, run("success", zip(forged, signed(report(), nextRun(gh)))), attempt),
    ).toEqual(refused);
    // Signed by a process that guessed at the key, or the right bytes for another run.
    expect(
      await reportOfRun(
        ctx,
        run("success", zip(forged, signed(forged, nextRun(gh), "sk-ant-guess"))),
        attempt,
      ),
    ).toEqual(refused);
    expect(await reportOfRun(ctx, run("success", zip(report(), signed(report(), "1"))), attempt)).toEqual(
      refused,
    );
    // Without one at all.
    expect(await reportOfRun(ctx, run("success", zip(report())), attempt)).toEqual({
      reason:
        "the job's report carries no report.mac: give the task workflow's step the AGENTRELAY_REPORT_SECRET the orchestrator's has",
    });
  });
});

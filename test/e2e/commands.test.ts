/**
 * Only writers steer a run, and nobody else can stop their commands (security cases 72 and 73), on the
 * end-to-end stand-in with the orchestrator as a workflow (no app) and with the app:
 * - without an app, a comment by someone who is not the repository's owner, a member or a collaborator
 *   starts no orchestrator job (the installed workflow's `if` reads `author_association`), and a
 *   collaborator without write access starts one that writes nothing;
 * - with the app, a non-writer's command costs no write (no answer, no reaction);
 * - a writer's command that waited for GitHub's write limit is carried out by the scheduled run once
 *   the limit frees, whatever a reader wrote meanwhile: the answer's hidden marker, the app's
 *   reactions, a thousand comments before it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { e2eAgent } from "../../harness/e2e-agent.ts";
import { isWrite } from "../../harness/fake-rate-limits.ts";
import { chainsGraph } from "../../harness/graphs.ts";
import { type Standin, startStandin } from "../../harness/standin.ts";
import { answerMarker } from "../../src/app/commands.ts";
import { SCHEDULE_WORKFLOW } from "../../src/app/workflow.ts";

let standin: Standin | undefined;
afterEach(async () => {
  await standin?.close();
  standin = undefined;
});

const MINUTE = 60_000;
const RUN = "chains/1";
const writes = (s: Standin) => s.gh.calls.filter((c) => isWrite(c)).length;

describe("commands from people who may not steer", () => {
  it("without an app: start no orchestrator job unless the author is the repository's, and write nothing", async () => {
    const s = (standin = await startStandin({
      script: e2eAgent(),
      orchestrator: "workflow",
      jobs: "scripted",
    }));
    await s.push({ ".workflow/chains.yaml": chainsGraph(1, 1) });
    await s.idle();
    const issue = s.gh.issues[0]!.number;
    s.gh.permissions.set("mallory", "read");
    s.gh.permissions.set("bob", "read");
    const before = { runs: s.runs!.runs.length, writes: writes(s) };
    for (const association of ["NONE", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR"])
      await s.comment(issue, "/agentrelay cancel", "mallory", association);
    await s.idle();
    expect(s.runs!.runs.slice(before.runs).map((r) => r.state)).toEqual(["skipped", "skipped", "skipped"]);
    // A collaborator with read access only: a job starts (GitHub cannot tell), and writes nothing.
    await s.comment(issue, "/agentrelay status", "bob", "COLLABORATOR");
    await s.idle();
    expect(s.runs!.runs.at(-1)!.state).toBe("done");
    expect(writes(s)).toBe(before.writes);
    // A writer is answered.
    await s.comment(issue, "/agentrelay status", "alice", "OWNER");
    await s.idle();
    expect(s.gh.comments.at(-1)!.body).toContain("Run `chains/1`: succeeded");
  }, 180_000);

  it("with the app: cost no write", async () => {
    const s = (standin = await startStandin({ script: e2eAgent(), jobs: "scripted" }));
    await s.push({ ".workflow/chains.yaml": chainsGraph(1, 1) });
    await s.idle();
    s.gh.permissions.set("mallory", "read");
    const before = writes(s);
    await s.comment(s.gh.issues[0]!.number, "/agentrelay cancel", "mallory", "NONE");
    await s.idle();
    expect(writes(s)).toBe(before);
    expect(s.gh.reactions).toEqual([]);
  }, 180_000);
});

describe("a writer's command that waited for GitHub's write limit, without an app", () => {
  it("is carried out once the limit frees, whatever a reader wrote meanwhile", async () => {
    const s = (standin = await startStandin({
      script: e2eAgent(),
      orchestrator: "workflow",
      jobs: "scripted",
      simulated: {},
      memory: true,
    }));
    await s.push({ ".workflow/chains.yaml": chainsGraph(1, 1) });
    expect(await s.runToEnd(RUN, 60 * MINUTE)).toBe("succeeded");
    const issue = s.gh.issues[0]!.number;
    s.gh.permissions.set("mallory", "read");
    // A thousand comments of the day (the sweep reads ten pages of a hundred).
    for (let i = 0; i < 1_000; i++)
      s.gh.comments.push({
        id: 50_000 + i,
        issue,
        body: "me too",
        app: false,
        user: { login: "mallory", type: "User" },
        association: "NONE",
        at: s.gh.clock.now(),
      });
    // GitHub refuses writes for 40 minutes (but the schedule's enabling).
    const until = s.gh.clock.now() + 40 * MINUTE;
    s.gh.fault = (call) => {
      const now = s.gh.clock.now();
      if (now >= until || !isWrite(call) || call.path.endsWith(`/${SCHEDULE_WORKFLOW}/enable`)) return null;
      const message =
        "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.";
      return [403, { message }, { "retry-after": String(Math.ceil((until - now) / 1000)) }];
    };
    await s.comment(issue, "/agentrelay status", "alice", "OWNER");
    const command = s.gh.comments.at(-1)!.id;
    // A reader marks it answered, and reacts as the orchestrator does when it is done.
    await s.comment(
      issue,
      `${answerMarker(command, 0)}\n${answerMarker(command)}\nanswered`,
      "mallory",
      "NONE",
    );
    s.gh.reactions.push({ comment: command, content: "eyes" }, { comment: command, content: "-1" });
    const answers = () => s.gh.comments.filter((c) => c.app && c.body.includes(answerMarker(command, 0)));
    await s.timeline!.run(() => answers().length > 0, 3 * 60 * MINUTE);
    await s.timeline!.run(() => false, 60 * MINUTE);
    expect(answers().map((c) => c.body.split("\n").at(-1))).toEqual([
      "Run `chains/1`: succeeded; the status comment is up to date.",
    ]);
  }, 240_000);
});

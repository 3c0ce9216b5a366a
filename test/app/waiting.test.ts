/**
 * Work that waited for GitHub's write limit (security case 10): with the installation's hour of
 * writes spent, a `/agentrelay budget +1` and a push of a new graph are answered 503 in one line and
 * change nothing; an hour later the app's periodic sweep carries both out, once, however often it
 * runs: the budget raised once with its answer, the new graph's run started once.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Harness, issueComment, pushPayload, runJob, startApp } from "../../harness/app.ts";
import { DIAMOND } from "../../harness/graphs.ts";
import { answerMarker } from "../../src/app/commands.ts";
import { WRITES_PER_HOUR, writeBudget } from "../../src/github/write-pacing.ts";

const MINUTE = 60_000;
let h: Harness;
beforeEach(async () => {
  h = await startApp({}, "nock", 15 * MINUTE);
  h.gh.permissions.set("alice", "write");
});
afterEach(() => h.close());

/** A run budget a's job spends, so that b and c wait for a raise (the floor lowered for small amounts). */
const BUDGETED = DIAMOND.replace(
  "max_concurrency: 2",
  "max_concurrency: 2\nmax_cost_usd: 0.25\nmin_attempt_cost_usd: 0.05",
);
/** How much the run's budget was raised, and the answers that carry the mark of comment `id`'s command. */
const raised = () =>
  (h.gh.state("diamond/1") as unknown as { budget: { run: { raisedMicros: number } } }).budget.run
    .raisedMicros;
const answersTo = (id: number) =>
  h.gh.comments.filter((c) => c.body.includes(`agentrelay:answer comment=${id} command=0`));
const sweepTwice = async () => {
  await h.reconcile();
  await h.reconcile();
};

const OTHER = `name: other\ntasks:\n  - id: x\n    description: another graph\n`;

describe("work that waited for GitHub's write limit", () => {
  it("is carried out once by the reconciler when the limit frees up: a command, and a pushed graph", async () => {
    await h.pushGraph(".workflow/diamond.yaml", BUDGETED);
    await runJob(h, h.gh.dispatches[0]!, { costMicros: 250_000 });
    expect(h.gh.dispatches).toHaveLength(1); // b and c wait for budget
    // Every write of the hour is spent.
    const budget = writeBudget(String(h.gh.installationId), h.gh.clock);
    for (let i = 0; i < WRITES_PER_HOUR; i++) budget.record();
    const before = h.gh.branches.get("agentrelay-state/diamond");
    expect(await issueComment(h, "/agentrelay budget +1", "alice", { id: 801 })).toBe(503);
    // A new graph, and one that is invalid (whose answer is a failed check run, a write too).
    const main = h.gh.branches.get("main")!;
    const added = { ".workflow/other.yaml": OTHER, ".workflow/bad.yaml": "name: bad\ntasks: 5\n" };
    const pushed = h.gh.commit("main", added, "add other");
    expect(await h.deliver("push", pushPayload(h.gh, main, pushed, { added: Object.keys(added) }))).toBe(503);
    expect(
      h.logs.filter((l) => / answered 503: GitHub's write limit for this installation is spent/.test(l)),
    ).toHaveLength(2);
    // Nothing changed.
    expect(h.gh.branches.get("agentrelay-state/diamond")).toBe(before);
    expect(h.gh.branches.has("agentrelay-state/other")).toBe(false);
    // Within the hour, the sweep finds the limit still spent and leaves them waiting.
    await h.reconcile().catch(() => undefined);
    expect(h.gh.branches.has("agentrelay-state/other")).toBe(false);
    // An hour later, the sweep (twice: as often as it runs) carries out each once.
    h.gh.clock.advance(61 * MINUTE);
    await sweepTwice();
    expect(raised()).toBe(1_000_000);
    const answers = answersTo(801);
    expect(answers).toHaveLength(1);
    expect(answers[0]!.body).toContain("raised the budget of the run by $1.00");
    expect(answers[0]!.issue).toBe(h.gh.issues[0]!.number);
    expect(h.gh.state("other/1").tasks.x!.status).toBe("running");
    expect(h.gh.issues.filter((i) => i.title === "agentrelay run other/1")).toHaveLength(1);
    const dispatched = h.gh.dispatches.map((d) => `${d.inputs.run} ${d.inputs.task}/${d.inputs.attempt}`);
    expect(dispatched.sort()).toEqual(["diamond/1 a/1", "diamond/1 b/1", "diamond/1 c/1", "other/1 x/1"]);
    expect(h.gh.file("agentrelay-state/other", "run-2/run.json")).toBeUndefined();
    const refused = h.gh.checkRuns.filter((c) => c.name === "agentrelay / .workflow/bad.yaml");
    expect(refused.map((c) => `${c.conclusion} ${c.head_sha}`)).toEqual([`failure ${pushed}`]);
  });

  it("answers a command applied when it came, whose answer was lost, without applying it again", async () => {
    await h.pushGraph(".workflow/diamond.yaml", BUDGETED);
    await runJob(h, h.gh.dispatches[0]!, { costMicros: 250_000 });
    // The raise lands; its answer (the next write) does not.
    const original = h.gh.handle.bind(h.gh);
    let lose = true;
    h.gh.handle = (method, url, body, accept) =>
      lose &&
      method === "POST" &&
      /\/issues\/\d+\/comments$/.test(url) &&
      String((body as { body?: string }).body).includes("comment=802")
        ? ((lose = false), [502, { message: "Bad Gateway" }])
        : original(method, url, body, accept);
    expect(await issueComment(h, "/agentrelay budget +1", "alice", { id: 802 })).toBe(500);
    expect(raised()).toBe(1_000_000);
    h.gh.clock.advance(30 * MINUTE);
    await sweepTwice();
    expect(raised()).toBe(1_000_000);
    expect(answersTo(802).map((c) => c.body.split("\n").at(-1))).toEqual([
      "Done: `/agentrelay budget +1` was applied when it came; its answer waited for GitHub's write limit.",
    ]);
  });

  it("is stopped by nobody else's marker or reaction, nor by a thousand earlier comments (security case 72)", async () => {
    h.gh.permissions.set("mallory", "read");
    await h.pushGraph(".workflow/diamond.yaml", BUDGETED);
    await runJob(h, h.gh.dispatches[0]!, { costMicros: 250_000 });
    const issue = h.gh.issues[0]!.number;
    // A thousand comments of the day before the command (ten pages of the sweep, read oldest first).
    for (let i = 0; i < 1_000; i++)
      h.gh.comments.push({
        id: 5_000 + i,
        issue,
        body: "me too",
        app: false,
        user: { login: "mallory", type: "User" },
        association: "NONE",
        at: h.gh.clock.now(),
      });
    const budget = writeBudget(String(h.gh.installationId), h.gh.clock);
    for (let i = 0; i < WRITES_PER_HOUR; i++) budget.record();
    expect(await issueComment(h, "/agentrelay budget +1", "alice", { id: 9_801 })).toBe(503);
    // A reader writes the answer's hidden marker, and reacts as the app does when it is done.
    h.gh.comments.push({
      id: 9_802,
      issue,
      body: `${answerMarker(9_801, 0)}\n${answerMarker(9_801)}\ndone, honest`,
      app: false,
      user: { login: "mallory", type: "User" },
      association: "NONE",
      at: h.gh.clock.now(),
    });
    h.gh.reactions.push({ comment: 9_801, content: "eyes" }, { comment: 9_801, content: "-1" });
    h.gh.clock.advance(61 * MINUTE);
    await sweepTwice();
    expect(raised()).toBe(1_000_000);
    expect(answersTo(9_801).filter((c) => c.app)).toHaveLength(1);
  });
});

/**
 * A run whose state on the state branch is damaged (by hand, by a bad merge, by a tool): the app
 * answers its events without a 500, says so once on the run's tracking issue (or on an issue of its
 * own when the run's record is gone), changes nothing, and never starts a run over it.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Harness, issueComment, startApp } from "../../harness/app.ts";
import { DIAMOND } from "../../harness/graphs.ts";

let h: Harness;
beforeEach(async () => {
  h = await startApp({ statusIntervalMs: 0 });
});
afterEach(() => h.close());

const BRANCH = "agentrelay-state/diamond";
const BUCKET = "run-1/tasks/000.json";

/** Files to change on the state branch (null: removed), or the run key its run.json is to name instead. */
/** A change of the files, a run key for run.json to name, or a change of run.json's text. */
type Damage = Record<string, string | null> | string | ((index: string) => string);

const KINDS: [string, Damage, RegExp][] = [
  ["bad JSON", { [BUCKET]: '{"tasks":' }, /tasks\/000\.json of run diamond\/1 is not JSON/],
  ["null", { [BUCKET]: "null" }, /is not a JSON object \(it is null\)/],
  ["an array", { [BUCKET]: "[]" }, /is not a JSON object \(it is an array\)/],
  ["wrong types", { [BUCKET]: '{"tasks":{"a":{"status":5}}}' }, /has a wrong value at tasks\.a\.status/],
  ["a __proto__ wrapper", { [BUCKET]: '{"tasks":{"__proto__":{"a":{}}}}' }, /has a key __proto__ in tasks/],
  ["a missing bucket", { [BUCKET]: null }, /tasks\/000\.json of run diamond\/1 is missing/],
  [
    "a missing run.json",
    { "run-1/run.json": null },
    /run\.json of run diamond\/1 is missing from the run's directory/,
  ],
  ["a missing graph.yaml", { "run-1/graph.yaml": null }, /graph\.yaml of run diamond\/1 is missing/],
  [
    "a graph.yaml that is no graph",
    { "run-1/graph.yaml": "name: [" },
    /graph\.yaml of run diamond\/1 is not a graph the run can follow \(line \d+: /,
  ],
  ["an emptied bucket", { [BUCKET]: "{}" }, /tasks\/000\.json of run diamond\/1 has no record of task 'a'/],
  ["another run's key", "diamond/7", /run\.json of run diamond\/1 names run 'diamond\/7'/],
  [
    "five million buckets (security case 75)",
    (index) => index.replace(/"buckets":\d+/, '"buckets":5000000'),
    /run\.json of run diamond\/1 says the run has 5000000 task buckets, more than a graph of 20000 tasks has \(625\)/,
  ],
];

describe("a damaged run state on GitHub", () => {
  it.each(KINDS)("%s: answered without a 500, said once, nothing changed", async (_kind, change, problem) => {
    await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
    const tracking = h.gh.issues[0]!;
    // run.json naming another run (its layout stays first, as the app writes it).
    const index = (key: string) => {
      const run = JSON.parse(h.gh.file(BRANCH, "run-1/run.json")!) as Record<string, unknown>;
      return JSON.stringify({ ...run, runKey: key, runNumber: Number(key.split("/")[1]) });
    };
    const files =
      typeof change === "string"
        ? { "run-1/run.json": index(change) }
        : typeof change === "function"
          ? { "run-1/run.json": change(h.gh.file(BRANCH, "run-1/run.json")!) }
          : change;
    h.gh.commit(BRANCH, files, "damage");
    const damaged = h.gh.branches.get(BRANCH)!;
    const dispatched = h.gh.dispatches.length;
    h.gh.permissions.set("alice", "write");
    for (const id of [90, 91])
      expect(await issueComment(h, "/agentrelay retry a", "alice", { id })).toBe(200);
    // Said once on the run's issue (each command is answered too, below).
    const said = h.gh.comments.filter((c) => c.body.startsWith("<!-- agentrelay:damaged run=diamond/1 "));
    const opened = h.gh.issues.filter((i) => i.title === "agentrelay: the state of run diamond/1 is damaged");
    const where = files["run-1/run.json"] === null ? opened : said;
    expect(where).toHaveLength(1);
    const text = "body" in where[0]! ? where[0].body : "";
    expect(text).toMatch(problem);
    expect(text).toContain(`on the branch ${BRANCH} at ${damaged.slice(0, 12)}`);
    if (where === said) expect(said[0]!.issue).toBe(tracking.number);
    // `/agentrelay status` is answered with the one line, where it was asked; the delivery's log says it.
    expect(await issueComment(h, "/agentrelay status", "alice", { id: 92 })).toBe(200);
    const answer = h.gh.comments.find((c) => c.body.includes("agentrelay:answer comment=92 command=0"));
    expect(answer?.body).toMatch(problem);
    expect(answer?.issue).toBe(tracking.number);
    expect(h.logs.some((l) => / \(issue_comment\): handled: run diamond\/1 cannot be read: /.test(l))).toBe(
      true,
    );
    // The graph pushed again (a resume) is answered without a 500.
    expect(await h.pushGraph(".workflow/diamond.yaml", DIAMOND.replace("first", "first!"))).toBeTruthy();
    // A job's token request says why in one line, and changes nothing.
    const a = h.gh.dispatches[0]!;
    const token = await h.call(
      "/agentrelay/token",
      { run: "diamond/1", task: "a", attempt: 1 },
      await h.oidc({ run_id: String(a.runId) }),
    );
    expect(token.status).toBe(409);
    expect(String(token.body.error)).toMatch(problem);
    expect(String(token.body.error)).not.toContain("\n");
    // Nothing changed, nothing dispatched, no run 2.
    expect(h.gh.branches.get(BRANCH)).toBe(damaged);
    expect(h.gh.dispatches).toHaveLength(dispatched);
    expect(h.gh.file(BRANCH, "run-2/run.json")).toBeUndefined();
    expect(h.gh.tokens.filter((t) => t.repositories.length)).toEqual([]);
  });
});

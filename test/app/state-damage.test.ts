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

const KINDS: [string, Record<string, string | null>, RegExp][] = [
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
];

describe("a damaged run state on GitHub", () => {
  it.each(KINDS)("%s: answered without a 500, said once, nothing changed", async (_kind, files, problem) => {
    await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
    const tracking = h.gh.issues[0]!;
    h.gh.commit(BRANCH, files, "damage");
    const damaged = h.gh.branches.get(BRANCH)!;
    const dispatched = h.gh.dispatches.length;
    h.gh.permissions.set("alice", "write");
    for (const id of [90, 91])
      expect(await issueComment(h, "/agentrelay retry a", "alice", { id })).toBe(200);
    const said = h.gh.comments.filter((c) => c.body.includes("agentrelay cannot read run `diamond/1`"));
    const opened = h.gh.issues.filter((i) => i.title === "agentrelay: the state of run diamond/1 is damaged");
    const where = files["run-1/run.json"] === null ? opened : said;
    expect(where).toHaveLength(1);
    const text = "body" in where[0]! ? where[0].body : "";
    expect(text).toMatch(problem);
    expect(text).toContain(`on the branch ${BRANCH} at ${damaged.slice(0, 12)}`);
    if (where === said) expect(said[0]!.issue).toBe(tracking.number);
    // Nothing changed, nothing dispatched, no run 2.
    expect(h.gh.branches.get(BRANCH)).toBe(damaged);
    expect(h.gh.dispatches).toHaveLength(dispatched);
    expect(h.gh.file(BRANCH, "run-2/run.json")).toBeUndefined();
  });
});

/** `npm run demo` ends with the target branch's whole history, however many commits the run made. */
import { describe, expect, it } from "vitest";
import { git } from "../../src/attempt/git.ts";
import { tempRepo } from "../support/git.ts";
// @ts-expect-error: a plain script, without types
import { history } from "../../scripts/demo-history.mjs";

describe("the demo's history", () => {
  it("is shown whole: every commit of a run that made more than a screenful", async () => {
    const repo = await tempRepo();
    for (let n = 1; n <= 20; n++) await git(repo, ["commit", "-q", "--allow-empty", "-m", `commit ${n}`]);
    const lines = (history(repo, "main") as string).trim().split("\n");
    expect(lines).toHaveLength(21);
    expect(lines.at(-1)).toMatch(/^\* [0-9a-f]+ initial$/);
  });
});

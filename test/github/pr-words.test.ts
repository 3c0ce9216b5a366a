/**
 * An agent's words in the PR bodies we write (task PRs, integration PRs) act on nothing when the PR
 * merges (security case 76): a merged PR closes the issues its body names with a closing keyword
 * (https://docs.github.com/en/issues/tracking-your-work-with-issues/using-issues/linking-a-pull-request-to-an-issue),
 * and a mention in it notifies its user, so each is broken by a zero-width space, as in a repair's commit.
 */
import { describe, expect, it } from "vitest";
import { integrationPrBody, taskPrBody } from "../../src/github/render.ts";
import { runAt, workstreamsGraph } from "../support/runs.ts";

const SAID = "Done.\nCloses #1, fixes owner/repo#2 and resolves https://github.com/o/r/issues/3; cc @octocat";

/** Closing keywords and references GitHub would act on, in the forms its docs list. */
const ACTING = [
  /\bclose[sd]?:?\s+\S*#\d/i,
  /\bfix(e[sd])?:?\s+\S*#\d/i,
  /\bresolve[sd]?:?\s+\S*(#\d|\/issues\/\d)/i,
  /(^|[^\w])#\d/,
  /@[A-Za-z0-9]/,
];

describe("an agent's closing keywords and mentions in a PR body", () => {
  const { plan, state } = runAt(workstreamsGraph(1, 2), {});
  for (const t of Object.values(state.tasks)) {
    t.status = "merged";
    t.pr = { number: 9, url: "https://github.com/o/r/pull/9" };
    t.summary = SAID;
    t.concerns = [SAID];
    t.opsConcerns = [SAID];
  }
  const [first] = plan.tasksByWorkstream.get("ws_0")!;

  it.each([
    ["a task PR's", () => taskPrBody(plan, state, first!)],
    ["an integration PR's", () => integrationPrBody(plan, state, "ws_0")],
  ])("%s body keeps them from acting, and keeps the words", (_what, body) => {
    const text = body();
    for (const acting of ACTING) expect(text).not.toMatch(acting);
    expect(text).toContain("Closes\u200b #\u200b1");
    expect(text).toContain("fixes\u200b owner/repo#\u200b2");
    expect(text).toContain("resolves\u200b https://github.com/o/r/issues/3");
    expect(text).toContain("@\u200boctocat");
  });
});

/**
 * Every webhook the app subscribes to (app.yml), replayed in the shapes of GitHub's published examples
 * (npm @octokit/webhooks-examples), each delivered to our repository: the app answers every one
 * without a 500, and an example that does not concern a run changes nothing.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import examples from "@octokit/webhooks-examples";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, repository, startApp } from "../../harness/app.ts";
import { DIAMOND } from "../../harness/graphs.ts";
import { REPO_ROOT } from "../support/fixtures.ts";

const subscribed = [...readFileSync(join(REPO_ROOT, "app.yml"), "utf8").matchAll(/^ {2}- (\w+) #/gm)].map(
  (m) => m[1]!,
);
const cases = (examples as unknown as { name: string; examples: Record<string, unknown>[] }[])
  .filter((e) => subscribed.includes(e.name))
  .flatMap((e) =>
    e.examples.map(
      (payload, i) =>
        [`${e.name}${payload.action ? `.${String(payload.action)}` : ""} #${i}`, e.name, payload] as const,
    ),
  );

let h: Harness;
beforeAll(async () => {
  h = await startApp({ statusIntervalMs: 0 });
  // A run going on, so that events can concern it.
  await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
});
afterAll(() => h.close());

describe("GitHub's published webhook examples, delivered to the app", () => {
  it("cover every event the app subscribes to", () => {
    expect(new Set(cases.map(([, name]) => name))).toEqual(new Set(subscribed));
  });

  it.each(cases)("%s is answered without a 500", async (_label, name, payload) => {
    const before = JSON.stringify(h.gh.state("diamond/1"));
    const status = await h.deliver(name, { ...payload, repository: repository(h.gh) });
    expect([200, 202]).toContain(status);
    // None of the examples names a branch, PR or run of ours: the run is as it was.
    expect(JSON.stringify(h.gh.state("diamond/1"))).toBe(before);
  });
});

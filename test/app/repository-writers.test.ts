/**
 * Who may start a run that writes to other repositories: the app's installation may reach them all, so
 * whoever pushes the graph (or comments `/agentrelay run`, or opens the PR) must have write access to
 * each repository the graph names besides its own, as GitHub's "Get repository permissions for a user"
 * says (harness/fake-repositories.ts keeps each repository's collaborators). Otherwise the graph is
 * refused at that repository's line, naming the person, and nothing is written.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  type Harness,
  issueComment,
  pushPayload,
  repository,
  type RepositorySpec,
  runJob,
  startApp,
  user,
} from "../../harness/app.ts";
import type { AppConfig } from "../../src/github/client.ts";
import { planCheckOfPull } from "../support/plan-check.ts";
import { API_THEN_CLIENT } from "../support/repositories.ts";

const PATH = ".workflow/api-client.yaml";
let h: Harness | undefined;
afterEach(() => h?.close());

/** octo/api and octo/web on the graph's installation; `web`: who may do what in octo/web. */
const both = (web: Record<string, string>): RepositorySpec[] => [
  { fullName: "octo/api", installation: 42, collaborators: { alice: "write", bob: "write" } },
  { fullName: "octo/web", installation: 42, collaborators: web },
];

/** The graph pushed to main by `sender`; the annotations of its check run, as `line: message`. */
async function pushedBy(
  repositories: RepositorySpec[],
  sender: ReturnType<typeof user>,
  config: Partial<AppConfig> = {},
  prepare: (harness: Harness) => void = () => {},
) {
  h = await startApp(config, "nock", Infinity, repositories);
  prepare(h);
  const before = h.gh.branches.get("main")!;
  const after = h.gh.commit("main", { [PATH]: API_THEN_CLIENT });
  expect(await h.deliver("push", { ...pushPayload(h.gh, before, after, { added: [PATH] }), sender })).toBe(
    200,
  );
  const check = h.gh.checkRuns.find((c) => c.name === `agentrelay / ${PATH}`);
  const annotations = (check?.output?.annotations ?? []) as { start_line: number; message: string }[];
  return annotations.map((a) => `${a.start_line}: ${a.message}`);
}

/** Nothing was written: no run, no job, no branch, in any repository. */
function nothingWritten(harness: Harness) {
  expect(harness.gh.issues.filter((i) => i.title.startsWith("agentrelay run"))).toEqual([]);
  for (const gh of harness.github.repositories.values()) {
    expect(gh.dispatches).toEqual([]);
    expect([...gh.branches].map(([b]) => b).filter((b) => b.startsWith("agentrelay"))).toEqual([]);
  }
}

const started = (harness: Harness) =>
  expect(harness.github.get("octo/api").dispatches.map((d) => d.inputs.task)).toEqual(["add-endpoint"]);

describe("a push starts a run that writes to other repositories only for someone who may write there", () => {
  it("starts it for someone with write access to each (maintain counts as write)", async () => {
    const lines = await pushedBy(both({ alice: "maintain" }), user("alice"));
    expect(lines).toEqual([]);
    started(h!);
  });

  it("refuses it for someone who may only read one, at its line, naming them and the fix", async () => {
    const lines = await pushedBy(both({ alice: "read" }), user("alice"));
    expect(lines).toEqual([
      '4: octo/web: alice may not write to it (GitHub says "read"), and the run would: ask for write access to octo/web, or have someone with it push the graph',
    ]);
    nothingWritten(h!);
  });

  it("refuses it for someone who is not a collaborator there (GitHub says none)", async () => {
    const lines = await pushedBy(both({}), user("alice"));
    expect(lines).toEqual([
      expect.stringMatching(/^4: octo\/web: alice may not write to it \(GitHub says "none"\)/),
    ]);
    nothingWritten(h!);
  });

  it("refuses it when GitHub answers 404 for the person there (the page lists 404 beside 200)", async () => {
    const notFound = (harness: Harness) => {
      harness.github.get("octo/web").fault = ({ path }) =>
        /\/collaborators\/alice\/permission/.test(path) ? [404, { message: "Not Found" }] : null;
    };
    const lines = await pushedBy(both({ alice: "write" }), user("alice"), {}, notFound);
    expect(lines).toEqual([
      expect.stringMatching(/^4: octo\/web: alice may not write to it \(GitHub says "none"\)/),
    ]);
    nothingWritten(h!);
  });

  it("refuses an app's push unless AGENTRELAY_ALLOWED_BOTS names it", async () => {
    const bot = user("github-actions[bot]", "Bot");
    const lines = await pushedBy(both({}), bot);
    expect(lines).toEqual([
      "3: octo/api: github-actions[bot] is an app, whose access to octo/api is not a person's: have someone with write access to octo/api push the graph, or name the app in AGENTRELAY_ALLOWED_BOTS",
      "4: octo/web: github-actions[bot] is an app, whose access to octo/web is not a person's: have someone with write access to octo/web push the graph, or name the app in AGENTRELAY_ALLOWED_BOTS",
    ]);
    nothingWritten(h!);
  });

  it("starts it for an app AGENTRELAY_ALLOWED_BOTS names", async () => {
    const bot = user("github-actions[bot]", "Bot");
    expect(await pushedBy(both({}), bot, { allowedBots: ["github-actions[bot]"] })).toEqual([]);
    started(h!);
  });
});

describe("the other ways a run starts", () => {
  it("`/agentrelay run` is refused for a commenter who may only read another repository", async () => {
    h = await startApp({}, "nock", Infinity, both({ bob: "read", alice: "write" }));
    h.gh.permissions.set("bob", "write"); // bob may command in the graph's repository...
    h.gh.permissions.set("alice", "write");
    h.gh.commit("main", { [PATH]: API_THEN_CLIENT }); // on main, its push not delivered
    h.gh.issues.push({ number: 1, title: "runs", body: "", state: "open" });
    const issue = { number: 1, body: "" };
    expect(await issueComment(h, `/agentrelay run ${PATH}`, "bob", { id: 81, issue })).toBe(200);
    const answer = h.gh.comments.find((c) => c.app && c.body.includes("Nothing started"));
    // ...but not write where the run would.
    expect(answer?.body).toContain(
      '.workflow/api-client.yaml:4:1: repositories.web: octo/web: bob may not write to it (GitHub says "read"), and the run would: ask for write access to octo/web, or have someone with it comment the command',
    );
    nothingWritten(h);
    // Someone who may write there starts it from the same comment.
    expect(await issueComment(h, `/agentrelay run ${PATH}`, "alice", { id: 82, issue })).toBe(200);
    started(h);
  });

  it("a retry on a running run is refused for a commenter who may only read another of its repositories", async () => {
    expect(await pushedBy(both({ alice: "write", bob: "read" }), user("alice"))).toEqual([]);
    started(h!);
    h!.gh.permissions.set("bob", "write"); // bob may command in the graph's repository...
    const dispatched = h!.github.get("octo/api").dispatches.length;
    expect(await issueComment(h!, "/agentrelay retry add-endpoint", "bob", { id: 83 })).toBe(200);
    const answer = h!.gh.comments.find((c) => c.app && c.body.includes("comment=83"));
    // ...but not write where the retry would.
    expect(answer?.body).toContain(
      '- octo/web: bob may not write to it (GitHub says "read"), and the run would: ask for write access to octo/web, or have someone with it comment the command',
    );
    expect(h!.github.get("octo/api").dispatches).toHaveLength(dispatched);
    expect(h!.gh.state("api-client/1").appliedCommands ?? []).toEqual([]);
  });

  it("a check run's Re-run by someone who may only read another of its repositories is refused, on that check run", async () => {
    expect(await pushedBy(both({ alice: "write", bob: "read" }), user("alice"))).toEqual([]);
    const api = h!.github.get("octo/api");
    await runJob(h!, { ...api.dispatches[0]!, in: api }, { outcome: "failed", reason: "flaky" });
    const check = h!.gh.checkRuns.find((c) => c.name === "agentrelay / add-endpoint")!;
    expect(check.conclusion).toBe("failure");
    h!.gh.permissions.set("bob", "write"); // bob may write in the graph's repository...
    const rerun = (login: string) =>
      h!.deliver("check_run", {
        action: "rerequested",
        check_run: {
          id: check.id,
          name: check.name,
          external_id: check.external_id,
          head_sha: check.head_sha,
        },
        repository: repository(h!.gh),
        sender: user(login),
      });
    expect(await rerun("bob")).toBe(200);
    // ...but not in octo/web, where the run would write: nothing starts, and the check run says why.
    expect(api.dispatches).toHaveLength(1);
    expect(h!.gh.checkRuns.filter((c) => c.name === "agentrelay / add-endpoint")).toHaveLength(1);
    expect(String(check.output?.summary).split("\n")[0]).toBe(
      '**Waiting for you**: Re-run by bob not done: octo/web: bob may not write to it (GitHub says "read"), and the run would: ask for write access to octo/web, or have someone with it press Re-run',
    );
    // Someone who may write in each is obeyed.
    h!.gh.permissions.set("alice", "write");
    expect(await rerun("alice")).toBe(200);
    expect(api.dispatches.map((d) => d.inputs.attempt)).toEqual(["1", "2"]);
  });

  it("a push the reconciler finds later (its webhook lost) has no known sender: refused until pushed again", async () => {
    h = await startApp({}, "nock", Infinity, both({ alice: "write" }));
    h.gh.commit("main", { [PATH]: API_THEN_CLIENT }); // its push never delivered
    await h.reconcile();
    const check = h.gh.checkRuns.find((c) => c.name === `agentrelay / ${PATH}`);
    const annotations = (check?.output?.annotations ?? []) as { start_line: number; message: string }[];
    expect(annotations.map((a) => `${a.start_line}: ${a.message}`)).toEqual([
      "3: octo/api: who pushed this graph is not known (its push was not seen), so nothing is written there: have someone with write access to octo/api push the graph again",
      "4: octo/web: who pushed this graph is not known (its push was not seen), so nothing is written there: have someone with write access to octo/web push the graph again",
    ]);
    nothingWritten(h);
  });

  it("a pull request's plan check says it to whoever opened it, before it is merged", async () => {
    h = await startApp({}, "nock", Infinity, both({ alice: "read" }));
    const { answer, check } = await planCheckOfPull(h, PATH, API_THEN_CLIENT);
    expect(answer).toBe(200);
    expect(check?.conclusion).toBe("failure");
    expect(check?.output?.summary).toContain(
      "line 4: `repositories.web`: octo/web: alice may not write to it",
    );
    nothingWritten(h);
  });
});

/**
 * An integration PR (#9, `agentrelay/g/w/integration` into `main`, one commit ahead) on the fake
 * GitHub, with the GitHub effects that merge it for a run of `engine`: what the tests of landing
 * (verified merges, merge queues) start from.
 */
import { Octokit } from "@octokit/rest";
import { FakeGitHub } from "../../harness/fake-github.ts";
import type { Engine } from "../../src/engine/engine.ts";
import { DEFAULT_CONFIG } from "../../src/github/client.ts";
import { GitHubEffects } from "../../src/github/effects.ts";
import { type HostedRun, newMeta } from "../../src/github/hosted-run.ts";

export const INTEGRATION_BRANCH = "agentrelay/g/w/integration";

/** The pair a verification checked: the target and the PR's head, as they stand now. */
export type Verified = { base: string; head: string };

/**
 * `prepare` changes the fake before the effects are made (a merge queue, say); `verified: false`: the
 * merge is asked without a verified pair (verification off), else with the pair as it stood at setup.
 */
export function integrationPrOnFake(
  engine: Engine,
  options: { prepare?: (github: FakeGitHub) => void; verified?: false } = {},
) {
  const github = new FakeGitHub();
  github.mount();
  github.commit("main", { "README.md": "hi\n" });
  github.branches.set(INTEGRATION_BRANCH, github.branches.get("main")!);
  github.commit(INTEGRATION_BRANCH, { "a.txt": "a\n" }, "a");
  github.openPull(9, INTEGRATION_BRANCH, "main");
  options.prepare?.(github);
  const octokit = new Octokit({ auth: "t", request: { retries: 0 } });
  const effects = new GitHubEffects({
    octokit,
    owner: "octo",
    repo: "demo",
    defaultBranch: "main",
    config: DEFAULT_CONFIG,
    now: () => 0,
    log: () => undefined,
  });
  const run = {
    ...engine.start(0).state,
    source: { path: "g.yaml", commit: "c", branch: "main", text: "" },
    github: newMeta(),
  } as unknown as HostedRun;
  const verifiedNow = (): Verified => ({
    base: github.branches.get("main")!,
    head: github.branches.get(INTEGRATION_BRANCH)!,
  });
  const atSetup = options.verified === false ? undefined : verifiedNow();
  const merge = (verified: Verified | undefined = atSetup) =>
    effects.repeatable(
      {
        type: "merge_integration_pr",
        key: "k",
        workstream: "w",
        pr: { number: 9, url: "u" },
        ...(verified ? { verified } : {}),
      },
      run,
      engine,
    );
  /** The integration PR asked to open (a handler deciding on a state from before it opened). */
  const open = () =>
    effects.repeatable({ type: "open_integration_pr", key: "o", workstream: "w" }, run, engine);
  const wait = () => effects.waits.get(run.runKey)?.get("workstream:w");
  return { github, octokit, merge, open, verifiedNow, wait };
}

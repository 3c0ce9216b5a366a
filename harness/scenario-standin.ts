/**
 * Runs a scenario on the loopback GitHub stand-in (the real app, the bundled Action, the real Claude
 * Code CLI against the scripted model): its files and graph pushed to a stand-in of its own, its hooks
 * played by a third party on the fake (a commit to the target, delivered as a push), its stand-in
 * options applied (a target that requires a merge queue, whose `merge_group` CI is the scenario's
 * check), and the bare repository's target checked independently afterwards.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RunState } from "../src/engine/types.ts";
import { pushPayload } from "./app.ts";
import { mergeGroups, settle } from "./fake-merge-queue.ts";
import type { Scenario } from "./scenario-file.ts";
import { scenarioAgent, scenarioGraph } from "./scenario-graph.ts";
import { dueBeforeMerge, judge, type ScenarioOutcome } from "./semantic-run.ts";
import type { Agent } from "./claude.ts";
import { type Standin, startStandin } from "./standin.ts";

type Hook = NonNullable<Scenario["hooks"]>[number];

/** A person's commit on the fake's target (their token may change workflow files), delivered as a push. */
function commitAsPerson(s: Standin, hook: Hook): void {
  const before = s.gh.branches.get("main")!;
  const after = s.gh.commit("main", hook.push, hook.message ?? "A third party's change");
  const added = Object.entries(hook.push).flatMap(([p, t]) => (t === null ? [] : [p]));
  void s.webhook("push", pushPayload(s.gh, before, after, { added }));
}

/** Whether the scenario's check passes on `sha` of the bare repository (the merge queue's CI). */
function checkPasses(scenario: Scenario, bare: string, sha: string): boolean {
  const dir = mkdtempSync(join(tmpdir(), "scenario-group-"));
  try {
    const archive = spawnSync("git", ["-C", bare, "archive", "--format=tar", sha], { maxBuffer: 1 << 28 });
    spawnSync("tar", ["-x", "-C", dir], { input: archive.stdout });
    const command = scenario.check.command ?? scenario.gate;
    return spawnSync("bash", ["-c", command], { cwd: dir, stdio: "ignore", timeout: 60_000 }).status === 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runScenarioOnStandin(
  scenario: Scenario,
  /** `agent`: the real Claude Code CLI in the jobs unless told (the bench's runs are real ones). */
  options: { verify: boolean; agent?: Agent },
): Promise<ScenarioOutcome> {
  const started = Date.now();
  const pending = [...(scenario.hooks ?? [])];
  // The fault hook may be asked before the stand-in is handed back: it then does nothing.
  const started_: { standin?: Standin } = {};
  const fire = (due: Hook[]) => {
    for (const hook of due) {
      pending.splice(pending.indexOf(hook), 1);
      commitAsPerson(started_.standin!, hook);
    }
  };
  const s = await startStandin({
    script: scenarioAgent([scenario]),
    ...(options.agent ? { agent: options.agent } : {}),
    ...(scenario.gate_timeout_seconds ? { gateTimeoutSeconds: scenario.gate_timeout_seconds } : {}),
    // The moment between a verification and the landing it allowed: GitHub's merge call, or the
    // fast-forward of the target to a commit that holds an open PR's head.
    fault: (call) => {
      const gh = started_.standin?.gh;
      const merging = /\/pulls\/(\d+)\/merge$/.exec(call.path);
      const forwarded = (call.body as { sha?: string } | null)?.sha;
      const holds = (head: string) => forwarded !== undefined && gh!.store.aheadBy(forwarded, head) === 0;
      const pull =
        call.method === "PUT" && merging
          ? gh?.pulls.find((p) => p.number === Number(merging[1]))
          : call.method === "PATCH" &&
              /\/git\/refs\/heads\/main$/.test(call.path) &&
              gh?.store.isCommit(forwarded ?? "")
            ? gh.pulls.find((p) => p.state === "open" && p.base === "main" && holds(gh.branches.get(p.head)!))
            : undefined;
      const workstream = pull ? /^agentrelay\/[^/]+\/([^/]+)\/integration$/.exec(pull.head)?.[1] : undefined;
      if (workstream) fire(dueBeforeMerge(pending, workstream));
      return null;
    },
  });
  started_.standin = s;
  // Right after a task's PR (or a workstream's integration PR) merged, before the app hears of it.
  const heard = s.gh.onMerge;
  s.gh.onMerge = (pull) => {
    const [, graph, rest] = /^agentrelay\/([^/]+)\/(.+)$/.exec(pull.head) ?? [];
    if (graph === scenario.name) {
      const id = rest!.endsWith("/integration")
        ? rest!.slice(0, -"/integration".length)
        : rest!.slice(graph.length + 1);
      fire(pending.filter((h) => "after_merge" in h.at && h.at.after_merge === id));
    }
    heard(pull);
  };
  try {
    if (scenario.stand_in?.merge_queue) s.gh.settings.mergeQueue.add("main");
    const since = s.gh.branches.get("main")!;
    const graph = scenarioGraph(scenario, options);
    await s.push({ ...scenario.files, [`.workflow/${scenario.name}.yaml`]: graph });
    const key = `${scenario.name}/1`;
    const state = () => s.gh.state(key) as unknown as RunState | undefined;
    const deadline = Date.now() + 600_000;
    // Idle is not the end: a job's report may still be on its way to the app, and a queued PR waits
    // for the queue's CI. Done once nothing changed over a quiet spell.
    let seen = -1;
    for (;;) {
      if (Date.now() > deadline) break;
      await s.idle(600_000);
      // The merge queue's CI: each group's check decides; the app hears of the merges it makes.
      const groups = mergeGroups(s.gh);
      if (groups.length > 0) {
        const verdicts = new Map(groups.map((g) => [g.pull.number, checkPasses(scenario, s.bare, g.sha)]));
        settle(s.gh, (pull) => verdicts.get(pull.number) ?? false);
        // The app ignores a closed PR's event sent as itself (the fake sends the queue's merge so); its
        // reconciler, which asks a queued PR on each tick, sees the merge.
        await s.reconcile();
        continue;
      }
      const now = state();
      if (now?.outcome != null || Date.now() > deadline) break;
      if (now && now.seq === seen) break;
      seen = now?.seq ?? -1;
      // A quiet spell, then a reconciler tick (the app's schedule), before it is taken as the end.
      await new Promise((done) => setTimeout(done, 3000));
      await s.reconcile();
    }
    return await judge(scenario, state()!, s.bare, since, options.verify, started);
  } finally {
    // The outcome names the bare repository (its `repo`): the caller removes it (`removeStandinFiles`).
    await s.close({ keepFiles: true });
  }
}

/**
 * Locally, an agent's worktree belongs to the user's repository, which the agent can reach: it plants
 * hooks in the repository's hooks directory, an fsmonitor command, clean filters and diff drivers in
 * its configuration (selected by the .gitattributes it commits), and replaces its worktree's `.git`
 * with a repository of its own. The runner's commits and merges run none of them, and the next task's
 * checkout puts the worktree's `.git` back.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { git } from "../../src/attempt/git.ts";
import { runLocal } from "../../src/local/run.ts";
import { demoAgent, manifestFor } from "../../src/scripted/demo-agent.ts";
import {
  promptOf,
  type ScriptedModelServer,
  startScriptedModel,
  toolResults,
} from "../../src/scripted/model-server.ts";
import { tempRepo } from "../support/git.ts";
import { scriptedRun } from "../support/local-run.ts";
import { WAIT_MS } from "../../harness/patience.ts";

const markers = mkdtempSync(join(tmpdir(), "agentrelay-local-traps-"));

/**
 * A trap records that the runner ran it (the agent's own git, which Claude Code also runs, may run
 * them: that is the agent's business, and its processes carry AGENTRELAY_SIGNAL_DIR); as a filter or
 * driver it passes its input through, as an fsmonitor it fails (git then looks for itself).
 */
const trap = (name: string) =>
  [
    `cat > ${markers}/${name} <<'EOF'`,
    "#!/bin/sh",
    `[ -n "$AGENTRELAY_SIGNAL_DIR" ] || ps -o args= $PPID >> ${markers}/${name}.ran`,
    name === "fsmonitor" ? "exit 1" : name === "filter" || name === "textconv" ? "exec cat" : "exit 0",
    "EOF",
    `chmod +x ${markers}/${name}`,
  ].join("\n");

const HOOKS = [
  "pre-commit",
  "post-commit",
  "post-merge",
  "post-checkout",
  "pre-merge-commit",
  "reference-transaction",
];

const PLANT = [
  ...[...HOOKS, "fsmonitor", "filter", "textconv", "inner-hook"].map(trap),
  'common="$(git rev-parse --git-common-dir)"',
  ...HOOKS.map((hook) => `cp ${markers}/${hook} "$common/hooks/${hook}"`),
  `git config core.fsmonitor ${markers}/fsmonitor`,
  `git config filter.trap.clean ${markers}/filter`,
  `git config filter.trap.smudge ${markers}/filter`,
  `git config diff.trap.textconv ${markers}/textconv`,
  "printf '* filter=trap diff=trap\\n' > .gitattributes",
  // The worktree's .git, replaced by a repository whose hooks the runner would run if it used it.
  "rm .git && git init -q .git-own && mv .git-own/.git .git && rmdir .git-own",
  `cp ${markers}/inner-hook .git/hooks/pre-commit && cp ${markers}/inner-hook .git/hooks/post-commit`,
].join("\n");

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel((request) => {
    if (manifestFor(promptOf(request))?.task.id !== "a") return demoAgent(request);
    const work = [
      PLANT,
      "mkdir -p notes && echo 'written for task a' > notes/a.md",
      "agentrelay-summary --message 'Wrote notes/a.md.' && agentrelay-complete",
    ];
    const done = toolResults(request).length;
    return done < work.length
      ? { tools: [{ name: "Bash", input: { command: work[done]!, description: `step ${done + 1}` } }] }
      : { text: "Task a is done." };
  });
});
afterAll(() => server.close());

const GRAPH = `name: hostile
workstreams:
  - id: only
    auto_merge: true
tasks:
  - id: a
    workstream_id: only
    description: write a note
  - id: b
    workstream_id: only
    dependencies: [a]
    description: write another note
`;

describe("local mode, with an agent that attacks the runner through git", () => {
  it("runs none of the hooks, filters, drivers or fsmonitor it planted, and puts its worktree's .git back", async () => {
    const repo = await tempRepo();
    // The worktree's .git once task b merged (the finished run removes its worktrees).
    const link = join(repo, ".agentrelay", "hostile", "workstreams", "only", ".git");
    let linked: { file: boolean; text: string } | null = null;
    const { state } = await runLocal({
      ...scriptedRun(repo, ".workflow/hostile.yaml", GRAPH, server.url),
      attemptTimeoutMs: WAIT_MS,
      gateTimeoutMs: WAIT_MS,
      onState: (s) => {
        if (linked === null && s.tasks.b?.status === "merged" && existsSync(link))
          linked = { file: statSync(link).isFile(), text: readFileSync(link, "utf8") };
      },
    });
    expect(state.outcome).toBe("succeeded");
    // The traps are in place (the agent ran), and none of them ran.
    expect(existsSync(join(repo, ".git", "hooks", "post-commit"))).toBe(true);
    expect(await git(repo, ["config", "--file", ".git/config", "core.fsmonitor"])).toBe(
      `${markers}/fsmonitor`,
    );
    expect(
      readdirSync(markers)
        .filter((f) => f.endsWith(".ran"))
        .map((f) => readFileSync(join(markers, f), "utf8")),
    ).toEqual([]);
    // The work landed, the attributes as data.
    const main = await git(repo, ["ls-tree", "-r", "--name-only", "main"]);
    expect(main.split("\n")).toEqual(expect.arrayContaining([".gitattributes", "notes/a.md", "notes/b.md"]));
    // Task b's checkout found the worktree's .git replaced and put the link back.
    expect(linked).toMatchObject({ file: true, text: expect.stringMatching(/^gitdir: .*\/worktrees\//) });
  });
});

/**
 * An agent that attacks the runner through git, on the end-to-end stand-in (the real app, the bundled
 * Action, the real Claude Code CLI): it plants hooks, an fsmonitor command, a credential helper, a
 * clean filter and an `insteadOf` redirect in its checkout's `.git`, each of which would record the
 * environment it ran with and force-push another branch. The runner commits, checks and pushes through
 * its own git directory: none of them runs, no other branch moves, the work lands where it should. A
 * report forged inside the job (with the job's own OIDC token, without the runner's key) is refused.
 */
import { chmodSync, existsSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { demoAgent, manifestFor } from "../../src/scripted/demo-agent.ts";
import { promptOf, type Script, toolResults } from "../../src/scripted/model-server.ts";
import { failedAttempt } from "../../src/attempt/attempt.ts";
import { toReport } from "../../src/protocol/report.ts";
import { type Standin, startStandin } from "../../harness/standin.ts";

let standin: Standin | undefined;
afterEach(async () => {
  await standin?.close();
  standin = undefined;
});

const GRAPH = `name: hostile
workstreams:
  - id: main_ws
    auto_merge: true
tasks:
  - id: a
    workstream_id: main_ws
    description: write a note
  - id: b
    workstream_id: main_ws
    dependencies: [a]
    description: write another note
`;

/** The shell an attacking agent runs in its checkout: every trap records that it ran, and with what. */
function plant(markers: string): string {
  const trap = (name: string) =>
    [
      `cat > ${markers}/${name}.sh <<'EOF'`,
      "#!/bin/sh",
      `env > ${markers}/${name}.ran`,
      "git push --force origin HEAD~1:refs/heads/main >/dev/null 2>&1",
      "git push origin HEAD:refs/heads/planted >/dev/null 2>&1",
      "cat",
      "EOF",
      `chmod +x ${markers}/${name}.sh`,
    ].join("\n");
  return [
    ...["pre-push", "post-checkout", "pre-commit", "post-commit", "fsmonitor", "filter", "credential"].map(
      trap,
    ),
    ...["pre-push", "post-checkout", "pre-commit", "post-commit", "reference-transaction"].map(
      (hook) => `cp ${markers}/${hook === "reference-transaction" ? "pre-push" : hook}.sh .git/hooks/${hook}`,
    ),
    `git config core.fsmonitor ${markers}/fsmonitor.sh`,
    `git config credential.helper '!${markers}/credential.sh'`,
    `git config filter.trap.clean ${markers}/filter.sh`,
    `git config filter.trap.smudge ${markers}/filter.sh`,
    // Every file:// URL (the stand-in's remote) rewritten to a repository of the attacker's.
    `git init -q --bare ${markers}/stolen.git`,
    `git config url.file://${markers}/stolen.git/.insteadOf file://`,
    `git config url.file://${markers}/stolen.git/.pushInsteadOf file://`,
    "printf '* filter=trap\\n' > .gitattributes",
  ].join("\n");
}

/** The demo agent, but in task `a`, which plants the traps first, then does its work. */
const attacker =
  (markers: string): Script =>
  (request) => {
    if (manifestFor(promptOf(request))?.task.id !== "a") return demoAgent(request);
    const work = [
      plant(markers),
      "mkdir -p notes && echo '# notes/a.md: written for task a' > notes/a.md",
      "agentrelay-summary --message 'Wrote notes/a.md.' && agentrelay-complete",
    ];
    const done = toolResults(request).length;
    return done < work.length
      ? { tools: [{ name: "Bash", input: { command: work[done]!, description: `step ${done + 1}` } }] }
      : { text: "Task a is done." };
  };

describe("an agent that attacks the runner through git", () => {
  it("runs none of its hooks, configuration or filters, moves no other branch, and cannot report for the runner", async () => {
    const markers = mkdtempSync(join(tmpdir(), "agentrelay-traps-"));
    // The agent runs as a user of its own: it may plant here, and whoever ran a trap would write here.
    chmodSync(markers, 0o777);
    standin = await startStandin({ script: attacker(markers) });
    const mainBefore = standin.git("rev-parse", "main");
    await standin.push({ ".workflow/hostile.yaml": GRAPH });
    await standin.idle();

    const state = standin.gh.state("hostile/1");
    expect(state.outcome).toBe("succeeded");
    // The traps were planted (the agent ran), and none of them ran.
    expect(existsSync(join(markers, "pre-push.sh"))).toBe(true);
    expect(readdirSync(markers).filter((f) => f.endsWith(".ran"))).toEqual([]);
    // The work reached the real remote, through the task PR and the integration PR; nothing else moved.
    expect(standin.git("show", "main:notes/a.md")).toContain("written for task a");
    expect(standin.git("show", "main:notes/b.md")).toContain("written for task b");
    expect(standin.git("merge-base", "--is-ancestor", mainBefore, "main")).toBe("");
    expect(standin.git("branch", "--list", "planted")).toBe("");
    // Nothing reached the attacker's repository.
    expect(readdirSync(join(markers, "stolen.git", "refs", "heads"))).toEqual([]);

    // A process in task a's job that asks the job's OIDC endpoint for a token, as a planted hook would
    // have, cannot report for the attempt: it lacks the key only the runner holds.
    const job = standin.gh.dispatches.find((d) => d.inputs.task === "a")!;
    const oidc = (await (
      await fetch(`${standin.url}/oidc/token?job=${job.runId}&audience=agentrelay`, {
        headers: { authorization: "Bearer runner-request-token" },
      })
    ).json()) as { value: string };
    const before = JSON.stringify(standin.gh.state("hostile/1"));
    const forged = await fetch(`${standin.url}/agentrelay/report`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${oidc.value}` },
      body: JSON.stringify(toReport({ run: "hostile/1", task: "a", attempt: 1 }, failedAttempt("forged"))),
    });
    expect(forged.status).toBe(403);
    expect(((await forged.json()) as { error: string }).error).toContain("does not carry the report key");
    expect(JSON.stringify(standin.gh.state("hostile/1"))).toBe(before);
  });
});

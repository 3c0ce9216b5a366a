/**
 * What the agent can reach of the runner, on the end-to-end stand-in in workflow-only mode: the real
 * orchestrator, the bundled Action run as root with a job container's capabilities (Docker's default
 * set and NET_ADMIN: no PID namespace for the attempt's commands), and the real Claude Code CLI. The
 * agent tries every way to the runner it has:
 * - it replaces the `git` first on the runner's PATH (root's, as the image's are) with its own, which
 *   would record the environment it ran with (the push token is in GIT_CONFIG_VALUE_0), and puts
 *   `git`, `setpriv` and `unshare` in its own PATH's directory;
 * - it rewrites a root-owned file, and reads every process's environment for the runner's secrets;
 * - it connects to a root-owned unix socket, as the Docker socket a job container is given is;
 * - it leaves links where it hands work back (its concerns: a file only root may read; another to the
 *   runner's /proc/self/environ, for the work directory's artifact step, root, to follow);
 * - it leaves a `setsid` daemon that waits for the report and rewrites it before its upload.
 * Each is refused: the runner never runs the agent's program, no secret reaches the agent, and the
 * orchestrator records the runner's own report. A report rewritten before its upload anyway (by
 * whatever means) is refused by its HMAC, and the attempt is not credited with it.
 */
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Standin, startStandin } from "../../harness/standin.ts";
import { runnerHome } from "../../harness/standin-jobs.ts";
import { agentUserPossible } from "../../src/attempt/agent-user.ts";
import type { TaskRun } from "../../src/engine/types.ts";
import { REPORT_FILE } from "../../src/protocol/report.ts";
import { manifestFor } from "../../src/scripted/demo-agent.ts";
import { promptOf, resultText, type Script, toolResults } from "../../src/scripted/model-server.ts";

let standin: Standin | undefined;
let socket: Server | undefined;
afterEach(async () => {
  socket?.close();
  socket = undefined;
  await standin?.close();
  standin = undefined;
});

const GRAPH = `name: reach
max_task_attempts: 1
workstreams:
  - id: ws
    auto_merge: true
tasks:
  - id: x
    workstream_id: ws
    description: writes a note (and reaches for the runner)
`;

/** What stands in the agent's `git` for the runner's: it records that it ran, and with what. */
const fakeGit = (markers: string) => `#!/bin/sh\nenv > ${markers}/git-ran-$$\nexec /usr/bin/git "$@"\n`;

/** The agent's attempts on the runner, each recording what happened in `out`. */
function reachScript(
  out: string,
  runnerBin: string,
  rootFile: string,
  rootOnly: string,
  sock: string,
): string {
  return `import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { dirname, join } from "node:path";
const seen = {};
const attempt = (name, work) => { try { seen[name] = work() ?? "done"; } catch (error) { seen[name] = "refused: " + error.code; } };
// The git first on the runner's PATH, and the agent's own PATH directory (the signal commands').
attempt("replaceGit", () => copyFileSync(${JSON.stringify(join(out, "fake-git"))}, ${JSON.stringify(join(runnerBin, "git"))}));
const own = dirname(execFileSync("sh", ["-c", "command -v agentrelay-complete"], { encoding: "utf8" }).trim());
for (const name of ["git", "setpriv", "unshare"])
  attempt("plant-" + name, () => copyFileSync(${JSON.stringify(join(out, "fake-git"))}, join(own, name)));
attempt("rootFile", () => writeFileSync(${JSON.stringify(rootFile)}, "rewritten by the agent\\n"));
// Every process's environment: the runner's holds the job's token and the Anthropic credential.
const found = [];
for (const pid of readdirSync("/proc").filter((p) => /^\\d+$/.test(p))) {
  try {
    const env = readFileSync("/proc/" + pid + "/environ", "utf8");
    if (env.includes("INPUT_TOKEN=") || env.includes("AGENTRELAY_ANTHROPIC_CREDENTIAL=")) found.push(env);
  } catch {}
}
seen.environ = found.length;
writeFileSync(${JSON.stringify(join(out, "stolen"))}, found.join("\\n"));
seen.socket = await new Promise((resolve) =>
  connect(${JSON.stringify(sock)}).on("connect", () => resolve("connected")).on("error", (e) => resolve(e.code)),
);
// A daemon out of the command's session: it rewrites the report the runner writes when it ends.
const workDir = process.argv[2];
const temp = dirname(dirname(dirname(workDir)));
// Links where the agent hands work back, for the runner (root) to read as its concerns, and for the
// work directory's artifact step (root, following links) to upload.
attempt("linkConcerns", () => symlinkSync(${JSON.stringify(rootOnly)}, join(workDir, "attempts", "1", "concerns.log")));
attempt("linkEnviron", () => symlinkSync("/proc/self/environ", join(workDir, "attempts", "1", "environ")));
const daemon = \`
  const { readdirSync, readFileSync, writeFileSync } = require("node:fs");
  setInterval(() => {
    for (const dir of readdirSync(\${JSON.stringify(temp)}).filter((d) => d.startsWith("agentrelay-report-"))) {
      const file = \${JSON.stringify(temp)} + "/" + dir + "/${REPORT_FILE}";
      try {
        const report = JSON.parse(readFileSync(file, "utf8"));
        if (report.result.summary === "forged by a leftover process") continue;
        report.result.summary = "forged by a leftover process";
        report.result.costMicros = 0;
        writeFileSync(file, JSON.stringify(report));
        writeFileSync(\${JSON.stringify(${JSON.stringify(join(out, "rewrote"))})}, file);
      } catch {}
    }
  }, 20);
  setTimeout(() => process.exit(0), 120000);\`;
spawn("setsid", [process.execPath, "-e", daemon], { detached: true, stdio: "ignore" }).unref();
seen.daemon = "started";
writeFileSync(${JSON.stringify(join(out, "seen.json"))}, JSON.stringify(seen));
`;
}

describe.skipIf(!agentUserPossible())("an agent that reaches for the runner (needs root and setpriv)", () => {
  it("runs none of its programs, reads none of its secrets, reaches no root socket, and cannot rewrite its report", async () => {
    let out = "";
    const results: string[] = [];
    const script: Script = (request) => {
      const prompt = promptOf(request);
      if (!manifestFor(prompt)) return { text: "Nothing to do." };
      const workDir = dirname(/Read (\S+instructions\.md)/.exec(prompt)![1]!);
      const done = toolResults(request);
      results.push(...done.map(resultText));
      const steps = [
        "mkdir -p notes && printf 'task x, attempt 1\\n' > notes/x.md",
        `node ${join(out, "reach.mjs")} ${workDir}`,
        'agentrelay-summary --message "Wrote notes/x.md." && agentrelay-complete',
      ];
      return done.length < steps.length
        ? {
            tools: [
              {
                name: "Bash",
                input: { command: steps[done.length]!, description: `step ${done.length + 1}` },
              },
            ],
          }
        : { text: "Done." };
    };
    // The runner's programs come first on its PATH, root's, as the image's are in /usr/local/bin.
    const runnerBin = mkdtempSync(join(tmpdir(), "agentrelay-runner-bin-"));
    chmodSync(runnerBin, 0o755);
    writeFileSync(join(runnerBin, "git"), '#!/bin/sh\nexec /usr/bin/git "$@"\n', { mode: 0o755 });
    standin = await startStandin({
      script,
      orchestrator: "workflow",
      jobPath: runnerBin,
      // A runner takes a moment between the Action's step and the report's upload.
      betweenStepsMs: 1_500,
    });
    out = join(standin.root, "reach");
    mkdirSync(out);
    chmodSync(out, 0o777);
    const markers = join(out, "markers");
    mkdirSync(markers);
    chmodSync(markers, 0o777);
    writeFileSync(join(out, "fake-git"), fakeGit(markers), { mode: 0o755 });
    const rootFile = join(standin.root, "root-owned.txt");
    writeFileSync(rootFile, "root's\n", { mode: 0o644 });
    const rootOnly = join(standin.root, "root-only.txt");
    writeFileSync(rootOnly, "a line only root may read\n", { mode: 0o600 });
    // A root-owned unix socket, as the Docker socket is in a job container (root:docker, 660).
    const sock = join(standin.root, "docker.sock");
    socket = createServer((c) => c.end("docker\n"));
    await new Promise<void>((resolve) => socket!.listen(sock, resolve));
    chmodSync(sock, 0o660);
    writeFileSync(join(out, "reach.mjs"), reachScript(out, runnerBin, rootFile, rootOnly, sock));

    await standin.push({ ".workflow/reach.yaml": GRAPH });
    await standin.idle();

    // The agent did try (the checks below would pass vacuously otherwise).
    const seen = JSON.parse(readFileSync(join(out, "seen.json"), "utf8")) as Record<string, unknown>;
    expect(seen).toEqual({
      replaceGit: "refused: EACCES",
      "plant-git": "refused: EACCES",
      "plant-setpriv": "refused: EACCES",
      "plant-unshare": "refused: EACCES",
      rootFile: "refused: EACCES",
      linkConcerns: "done",
      linkEnviron: "done",
      environ: 0,
      socket: "EACCES",
      daemon: "started",
    });
    // The runner never ran the agent's program; its own git and file are as they were.
    expect(readdirSync(markers)).toEqual([]);
    expect(readFileSync(join(runnerBin, "git"), "utf8")).toBe('#!/bin/sh\nexec /usr/bin/git "$@"\n');
    expect(readFileSync(rootFile, "utf8")).toBe("root's\n");
    // No secret reached the agent: not in what it wrote, not in what it sent the model.
    for (const secret of ["ghs_", "sk-ant-e2e-scripted"]) {
      expect(readFileSync(join(out, "stolen"), "utf8")).not.toContain(secret);
      expect(results.join("\n")).not.toContain(secret);
    }
    // The daemon ended with the command that started it: it never rewrote the report.
    expect(existsSync(join(out, "rewrote"))).toBe(false);
    expect(execFileSync("ps", ["-eo", "args"], { encoding: "utf8" })).not.toContain("forged by a leftover");
    // The orchestrator recorded the runner's report: the agent's work, merged; the runner read no
    // link the agent left (a root-only file as its concerns), and its work directory holds none.
    const task = standin.gh.state("reach/1").tasks.x! as unknown as TaskRun;
    expect(task).toMatchObject({ status: "merged", summary: "Wrote notes/x.md.", concerns: [] });
    const job = standin.gh.dispatches[0]!.runId;
    const signals = join(
      runnerHome(standin.root, standin.gh.repo, job),
      "temp",
      "agentrelay",
      "x",
      "1",
      "attempts",
      "1",
    );
    expect(readdirSync(signals).sort()).toEqual([".done", "summary.md"]);
    expect(standin.git("show", `main:notes/x.md`)).toBe("task x, attempt 1");
  });

  it("a report rewritten before its upload anyway is refused by its HMAC: the attempt fails, credited with nothing it says", async () => {
    standin = await startStandin({
      script: () => ({ text: "unused: the jobs are scripted" }),
      orchestrator: "workflow",
      jobs: "scripted",
      // Whatever rewrote it (a process that outlived the attempt, a runtime token used elsewhere).
      beforeReportStep: (dir) => {
        const file = join(dir, REPORT_FILE);
        const report = JSON.parse(readFileSync(file, "utf8")) as { result: Record<string, unknown> };
        writeFileSync(
          file,
          JSON.stringify({
            ...report,
            result: { ...report.result, summary: "forged", costMicros: 7_000_000 },
          }),
        );
      },
    });
    await standin.push({ ".workflow/reach.yaml": GRAPH });
    await standin.idle();
    const task = standin.gh.state("reach/1").tasks.x! as unknown as TaskRun;
    const refused =
      "the job's report does not match its key: it was changed after the runner wrote it, so it is not believed";
    expect(task).toMatchObject({ status: "failed", summary: null });
    expect(task.attempts).toEqual([expect.objectContaining({ reason: refused })]);
    expect(task.attempts[0]!.costMicros ?? 0).toBe(0);
    expect(refused).not.toContain("\n");
  });

  it("a runner whose git the agent's user could change does not start the agent, and says why in one line", async () => {
    // A git first on the runner's PATH, in a directory anyone may write (no sticky bit).
    const open = mkdtempSync(join(tmpdir(), "agentrelay-open-bin-"));
    chmodSync(open, 0o777);
    writeFileSync(join(open, "git"), '#!/bin/sh\nexec /usr/bin/git "$@"\n', { mode: 0o755 });
    let asked = 0;
    standin = await startStandin({
      script: () => {
        asked++;
        return { text: "Done." };
      },
      jobPath: open,
    });
    await standin.push({ ".workflow/reach.yaml": GRAPH });
    await standin.idle();
    const task = standin.gh.state("reach/1").tasks.x! as unknown as TaskRun;
    expect(task.status).toBe("failed");
    expect(task.attempts[0]!.reason).toMatch(
      new RegExp(
        `^the runner will not run git where the agent can change it: ${open} \\(above ${open}/git\\) is writable by the agent's user \\(uid 61\\d{3}\\); install it where only root writes \\(the agent image does\\)`,
      ),
    );
    // The agent never started (the model was asked nothing), and the attempt does not count.
    expect(asked).toBe(0);
    expect(task.attemptBase).toBe(1);
  });
});

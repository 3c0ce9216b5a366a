/**
 * One task attempt, in the checkout of its task branch: write the protocol files, run Claude Code,
 * read what the agent handed back, run the completion gate (giving its output back to the same
 * session on failure, up to `max_gate_attempts`), and commit the work to the task branch.
 *
 * The caller prepares the checkout (first attempt: a new branch from the integration branch; retry:
 * the existing branch) and, afterwards, pushes and reports. The GitHub Action and the local mode
 * share this code.
 */
import { existsSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import { MIN_ATTEMPT_MICROS } from "../engine/budget.ts";
import { usd } from "../graph/amount.ts";
import { ParamsError } from "../protocol/cyberian-prompt.ts";
import { writeInAgentDir } from "./agent-files.ts";
import { agentUserProblem } from "./agent-user.ts";
import { type AttemptContext, type AttemptResult, failedAttempt, type RunningAttempt } from "./attempt.ts";
import { type ClaudeResult, runClaudeCode } from "./claude.ts";
import { CREDENTIAL_VARIABLES, credentialOf, credentialSecrets } from "./credential.ts";
import { startCredentialProxy } from "./credential-proxy.ts";
import { DEFAULT_LOOP_CAP, runCyberianStep } from "./cyberian-step.ts";
import { type Egress, egressLines, startEgress } from "./egress/egress.ts";
import { gateTail, runGate, tail } from "./gates.ts";
import { git, inCheckout, sealGitDir } from "./git.ts";
import { ANTHROPIC_API, modelApiOf, sayTrouble } from "./network.ts";
import { checkOutput } from "./output-checks.ts";
import { judgesOfTask, weakenedJudges } from "./landing-guards.ts";
import { OUTPUT_REVIEW_MODEL, outputReviewPrompt, parseOutputReview } from "./output-review.ts";
import { redactor, secretValues } from "./redact.ts";
import { review } from "./review.ts";
import { runResolution } from "./run-resolution.ts";
import { readSignals, signalPaths } from "./signals.ts";
import { workflowEdits } from "./workflow-files.ts";
import { prepareWorkDir } from "./work-dir.ts";

/** A Claude Code call not made (the attempt's budget has nothing left for it). */
const NOT_RUN: ClaudeResult = {
  ok: false,
  timedOut: false,
  exitCode: null,
  sessionId: null,
  finalText: "",
  turns: 0,
  costMicros: 0,
  error: null,
  overBudget: true,
};

export async function runAttempt(context: AttemptContext): Promise<AttemptResult> {
  const given = context.claude.env;
  const credential = credentialOf(given);
  // Nothing the agent prints leaves the attempt without redaction: not a log line, not a summary.
  const redact = redactor([...secretValues(given), ...credentialSecrets(credential)]);
  // The credential stays with the runner: the agent talks to it through the proxy, with a throwaway key.
  // A credential refused upstream, or a model API that stays unreachable, stops the agent with the
  // reason (it would retry for minutes): not the task's failure, so the attempt does not count.
  const stopped = new AbortController();
  let stopReason: string | null = null;
  const api = modelApiOf(given);
  // A verification has no agent: nothing it runs (the gates) is given the model API or a credential.
  const verification = context.resolution?.kind === "verify";
  const proxy =
    credential && !verification
      ? await startCredentialProxy(credential, {
          upstream: api.url,
          scripted: api.scripted,
          onStop: (trouble) => {
            stopReason ??= sayTrouble(trouble, context.retryCommand ?? "retry the task");
            stopped.abort();
          },
          ...(context.fixCredential ? { fixCredential: context.fixCredential } : {}),
          ...(context.unreachableGraceMs ? { graceMs: context.unreachableGraceMs } : {}),
          ...(context.silenceMs ? { silenceMs: context.silenceMs } : {}),
          log: (line) => context.log(redact(line)),
          capMicros: context.capMicros ?? null,
        })
      : null;
  const modelEnv = verification
    ? withoutModelApi(given)
    : proxy
      ? { ...withoutCredential(given), ANTHROPIC_BASE_URL: proxy.url, ANTHROPIC_API_KEY: proxy.key }
      : given;
  const log = (line: string) => context.log(redact(line));
  const { agentUser } = context;
  // The agent's network: only the model API and the hosts the graph names, through the egress proxy.
  let egress: Egress | null = null;
  let result: AttemptResult;
  try {
    // Nothing the runner runs once the agent has started may be the agent's to change.
    const refused = agentUser ? agentUserProblem(agentUser, context) : null;
    if (refused) return { ...failedAttempt(redact(refused)), agentUnavailable: true };
    egress = context.network
      ? await startEgress({
          mode: context.network.mode,
          ...(context.network.resolver ? { resolver: context.network.resolver } : {}),
          allow: context.task.network.allow,
          modelUrl: modelEnv.ANTHROPIC_BASE_URL || ANTHROPIC_API,
          entry: context.signalEntry,
          agentGroup: agentUser?.gid ?? null,
          log,
        })
      : null;
    const gitDir = context.gitDir?.path ?? (await git(context.repoDir, ["rev-parse", "--absolute-git-dir"]));
    const ctx: RunningAttempt = {
      ...context,
      git: inCheckout({ workTree: context.repoDir, gitDir }),
      handOver: () => {
        if (context.gitDir?.seal) sealGitDir(gitDir);
        if (!agentUser) return;
        // The checkout, and where the agent hands work back, become its own; nothing else does.
        agentUser.give(context.repoDir);
        if (existsSync(join(context.workDir, "attempts", String(context.attempt))))
          for (const path of signalPaths(context.workDir, context.attempt)) agentUser.give(path);
      },
      claude: {
        ...context.claude,
        env: {
          ...modelEnv,
          ...egress?.env,
          ...(agentUser ? { HOME: agentUser.home, TMPDIR: agentUser.tmp } : {}),
        },
      },
      confine: {
        prefix: [...(egress?.prefix ?? []), ...(agentUser?.prefix ?? [])],
        ...(agentUser ? { endAll: agentUser.endAll, give: agentUser.give } : {}),
      },
      redact,
      log,
      stop: { signal: stopped.signal, reason: () => stopReason },
      metered: () => proxy?.spentMicros() ?? 0,
    };
    result = ctx.resolution ? await runResolution(ctx, ctx.resolution) : await runAttemptUnredacted(ctx);
  } catch (error) {
    // A template that cannot render with the run's params fails the attempt before the agent starts.
    if (!(error instanceof ParamsError)) throw error;
    result = failedAttempt(`template error in ${error.message}`);
  } finally {
    await proxy?.close();
    // Whatever the agent's user still runs ends with the attempt, whatever ended it.
    await agentUser?.endAll();
  }
  // Every call through the proxy is charged, a gate's own included, which Claude Code does not count.
  if (proxy) result = { ...result, costMicros: Math.max(result.costMicros, proxy.spentMicros()) };
  if (stopReason !== null && result.outcome === "failed")
    result = { ...result, reason: stopReason, agentUnavailable: true };
  const network = egress ? egressLines(egress, await egress.refusals()) : [];
  await egress?.close();
  return {
    ...result,
    reason: result.reason === null ? null : redact(result.reason),
    concerns: result.concerns.map(redact),
    opsConcerns: [...result.opsConcerns, ...network].map(redact),
    summary: result.summary === null ? null : redact(result.summary),
  };
}

/** An environment without the variables that carry an Anthropic credential. */
function withoutCredential(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const name of CREDENTIAL_VARIABLES) delete out[name];
  return out;
}

/** An environment without a credential or the model API's address: a verification's gates. */
function withoutModelApi(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out = withoutCredential(env);
  delete out.ANTHROPIC_BASE_URL;
  return out;
}

async function runAttemptUnredacted(ctx: RunningAttempt): Promise<AttemptResult> {
  const signalDir = prepareWorkDir(ctx);
  const env: NodeJS.ProcessEnv = {
    ...ctx.claude.env,
    PATH: `${join(ctx.workDir, "bin")}:${ctx.claude.env.PATH ?? process.env.PATH ?? ""}`,
    AGENTRELAY_SIGNAL_DIR: signalDir,
  };
  let turns = 0;
  let costMicros = 0;
  const gates: AttemptResult["gates"] = [];
  let gateOutput: string | null = null;
  const extraOps: string[] = [];
  const reviewConcerns: string[] = [];
  let lastSession: string | null = null;
  let overBudget = false;
  const agent = async (prompt: string, resume: string | null): Promise<ClaudeResult> => {
    const left = ctx.capMicros == null ? null : ctx.capMicros - Math.max(costMicros, ctx.metered());
    if (left !== null && left < MIN_ATTEMPT_MICROS) {
      overBudget = true;
      return {
        ...NOT_RUN,
        error: `stopped at its budget of ${usd(ctx.capMicros!)}: nothing left for another agent call`,
      };
    }
    return runClaudeCode({
      bin: ctx.claude.bin,
      cwd: ctx.repoDir,
      env,
      prompt,
      model: ctx.task.primaryAgent.model,
      maxTurns: ctx.claude.maxTurns,
      allowedTools: ctx.claude.allowedTools,
      addDirs: [ctx.workDir],
      timeoutMs: ctx.claude.timeoutMs,
      resume,
      maxBudgetMicros: left,
      log: ctx.log,
      stop: ctx.stop,
      confine: ctx.confine,
      ...(ctx.logFile ? { logFile: ctx.logFile } : {}),
    }).then((r) => {
      turns += r.turns;
      costMicros += r.costMicros;
      overBudget ||= r.overBudget;
      lastSession = r.sessionId ?? lastSession;
      return r;
    });
  };

  // Where the attempt's own work begins (with what the runner staged, such as the agent configuration
  // it restored): what the output checks compare with, and where a blocked attempt returns.
  const startHead = await ctx.git.git(["rev-parse", "HEAD"]);
  await ctx.git.git(["add", "--all"]);
  const startTree = await ctx.git.git(["write-tree"]);
  ctx.handOver();

  /** The output checks (and the output review, when the graph asks for it) on the attempt's commits. */
  const checkBeforeLanding = async (commit: string, succeeded: boolean): Promise<string[]> => {
    const found = await checkOutput(ctx.git, startTree, commit, ctx.task.taggedPaths);
    const workflows = ctx.workflowFilesRefused ? await workflowEdits(ctx.git, startTree, commit) : null;
    if (workflows) found.blocking.push(workflows);
    // `protect_tests`: the tests that were there and what the gates run judge the task, not the task them.
    if (ctx.graph.settings.protectTests) {
      const weakened = await weakenedJudges(ctx.git, startTree, commit, judgesOfTask(ctx.graph, ctx.task));
      if (weakened.length > 0)
        found.blocking.push(
          `the task changed what judges it (${weakened.join("; ")}), which \`protect_tests\` forbids`,
        );
    }
    reviewConcerns.push(...found.concerns);
    const settings = ctx.graph.settings.outputReview;
    if (found.blocking.length > 0 || !settings || !succeeded) return found.blocking;
    const diff = await ctx.git.git(["diff", "--no-color", startTree, commit]);
    const answer = await runClaudeCode({
      bin: ctx.claude.bin,
      cwd: ctx.repoDir,
      env,
      prompt: outputReviewPrompt(ctx.task, diff),
      model: settings.model ?? OUTPUT_REVIEW_MODEL,
      maxTurns: 3,
      allowedTools: [],
      addDirs: [],
      timeoutMs: ctx.claude.timeoutMs,
      log: (line) => ctx.log(`output review: ${line}`),
      stop: ctx.stop,
      confine: ctx.confine,
    });
    turns += answer.turns;
    costMicros += answer.costMicros;
    const findings = answer.ok ? parseOutputReview(answer.finalText) : null;
    if (findings === null)
      extraOps.push(
        `the output review gave no verdict (${answer.error ?? "no SCOPE: line"}): not taken as a finding`,
      );
    ctx.log(
      `output review: ${findings === null ? "no verdict" : findings.length === 0 ? "keeps to the task" : `${findings.length} finding(s)`}`,
    );
    return (findings ?? []).map((f) => `the output review: ${f}`);
  };

  const finish = async (ended: "succeeded" | "failed", why: string | null): Promise<AttemptResult> => {
    let outcome = ended;
    let reason = why;
    const signals = readSignals(ctx.workDir, ctx.attempt);
    let noPr = signals.done?.noPr ?? false;
    let commit: string | null = null;
    if (outcome === "succeeded" && !noPr) {
      commit = await commitWork(ctx, "");
      if (commit === null) {
        noPr = true;
        if (signals.done)
          extraOps.push(
            "the task finished with a pull request requested, but there were no changes to commit",
          );
      }
    } else if (outcome === "failed") {
      // Kept on the task branch (no PR is opened), so that a retry continues from this work.
      commit = await commitWork(ctx, " (failed)");
    }
    if (commit !== null) {
      const blocking = await checkBeforeLanding(commit, outcome === "succeeded");
      if (blocking.length > 0) {
        // Nothing of this attempt lands: the branch returns to where it started, and the attempt fails.
        for (const finding of blocking) ctx.log(`output check: ${finding}`);
        await ctx.git.git(["reset", "-q", "--hard", startHead]);
        await ctx.git.git(["read-tree", "-u", "--reset", startTree]);
        outcome = "failed";
        reason = `the output checks blocked the push: ${blocking.join("; ")}`;
        commit = null;
        noPr = false;
      }
    }
    return {
      conflicted: [],
      base: null,
      verdict: null,
      agentUnavailable: false,
      outcome,
      noPr,
      reason,
      concerns: [...signals.concerns, ...reviewConcerns],
      opsConcerns: [...signals.opsConcerns, ...extraOps],
      summary: signals.summary,
      outputs: signals.outputs,
      costMicros,
      turns,
      gates,
      gateOutput: outcome === "failed" ? gateOutput : null,
      overBudget: outcome === "failed" && overBudget,
      commit,
      sessionId: lastSession,
    };
  };

  if (ctx.task.cyberian) {
    const failure = await runCyberianStep({
      step: ctx.task.cyberian,
      params: ctx.params ?? {},
      repoDir: ctx.repoDir,
      workflowDir: isAbsolute(ctx.graph.file)
        ? dirname(ctx.graph.file)
        : join(ctx.repoDir, dirname(ctx.graph.file)),
      loopCap: ctx.loopCap ?? DEFAULT_LOOP_CAP,
      session: ctx.resumeSession ?? null,
      timeoutMs: ctx.gateTimeoutMs,
      env,
      confine: ctx.confine,
      agent,
      log: ctx.log,
    });
    return finish(failure ? "failed" : "succeeded", failure);
  }

  const first = await agent(
    `Read ${join(ctx.workDir, "instructions.md")} and follow the steps exactly.`,
    null,
  );
  if (!first.ok) return finish("failed", first.error);
  const signals = readSignals(ctx.workDir, ctx.attempt);
  if (signals.failed) return finish("failed", `the agent gave up: ${signals.failed}`);
  if (!signals.done)
    extraOps.push("the agent stopped without running agentrelay-complete; its work was taken as complete");
  if (signals.done?.noPr) return finish("succeeded", null);
  let session = first.sessionId;

  /** The completion gate: on failure its output goes back to the same session, which fixes the work. */
  const gateLoop = async (): Promise<string | null> => {
    const command = ctx.task.completionGate;
    if (!command) return null;
    const max = ctx.task.maxGateAttempts;
    for (let n = 1; n <= max; n++) {
      const run = await runGate(command, ctx.repoDir, ctx.gateTimeoutMs, env, ctx.confine);
      // A gate may print the environment: what it wrote is masked before it is kept or shown.
      const gate = { ...run, output: ctx.redact(run.output) };
      writeInAgentDir(join(signalDir, "gate_last_output.txt"), gate.output);
      gates.push({ n: gates.length + 1, passed: gate.passed });
      ctx.log(`gate ${n}/${max}: ${gate.passed ? "passed" : "failed"}`);
      gateOutput = gate.passed ? null : gateTail(gate.output);
      if (gate.passed) return null;
      for (const line of gateOutput!.split("\n")) ctx.log(`  | ${line}`);
      if (n === max) break;
      const fix = await agent(
        [
          `The completion gate \`${command}\` failed (run ${n} of ${max}). Its output:`,
          "",
          "```",
          tail(gate.output),
          "```",
          "",
          "Find the cause and fix the work, then run `agentrelay-complete` again.",
        ].join("\n"),
        session,
      );
      if (!fix.ok) return fix.error;
      session = fix.sessionId ?? session;
      const after = readSignals(ctx.workDir, ctx.attempt);
      if (after.failed) return `the agent gave up: ${after.failed}`;
    }
    return `Completion gate failed after ${max} attempt(s): ${command}`;
  };

  const gateFailure = await gateLoop();
  if (gateFailure) return finish("failed", gateFailure);

  // Self-review: a second pass reads the diff; its findings go back to the agent once, then become concerns.
  if (ctx.task.review && ctx.attempt >= ctx.task.review.reviewOnAttempt) {
    const first = await review(ctx, env, ctx.task.review.agent.model);
    turns += first.turns;
    costMicros += first.costMicros;
    if (first.findings.length > 0) {
      const fix = await agent(
        [
          "A reviewer read your changes and found:",
          ...first.findings.map((f) => `- ${f}`),
          "",
          "Address these findings, then run `agentrelay-complete` again.",
        ].join("\n"),
        session,
      );
      if (!fix.ok) return finish("failed", fix.error);
      session = fix.sessionId ?? session;
      const again = await gateLoop();
      if (again) return finish("failed", again);
      const second = await review(ctx, env, ctx.task.review.agent.model);
      turns += second.turns;
      costMicros += second.costMicros;
      reviewConcerns.push(...second.findings.map((f) => `review: ${f}`));
    }
  }
  return finish("succeeded", null);
}

/** Commits what the agent changed to the task branch; returns the branch head, or null if it has no work. */
async function commitWork(ctx: RunningAttempt, note: string): Promise<string | null> {
  await ctx.git.git(["add", "--all"]);
  const staged = await ctx.git.raw(["diff", "--cached", "--quiet"]);
  if (staged.code !== 0) {
    await ctx.git.git([
      "commit",
      "-q",
      "-m",
      `${ctx.task.id}: attempt ${ctx.attempt}${note}`,
      "-m",
      `agentrelay task ${ctx.graph.name}/${ctx.task.id}`,
    ]);
  }
  // A retry starts from earlier attempts' commits (and locally, the agent may have committed itself).
  const ahead = Number(await ctx.git.git(["rev-list", "--count", `${ctx.baseRef}..HEAD`]));
  return ahead > 0 ? ctx.git.git(["rev-parse", "HEAD"]) : null;
}

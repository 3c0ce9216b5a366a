/**
 * An attempt that lands work rather than doing a task: a resolution of a PR's conflicts (resolve.ts),
 * or a verification or repair of an integration branch (repair.ts), with the attempt's agent, limits
 * and masking.
 */
import type { AttemptResult, RunningAttempt } from "./attempt.ts";
import { failedAttempt } from "./attempt.ts";
import { runClaudeCode } from "./claude.ts";
import { gateTail, runGate } from "./gates.ts";
import type { GateAnswer } from "./gate-verdicts.ts";
import { repairLanding, repairResolved, verifyLanding } from "./repair.ts";
import { resolveConflicts, type ResolutionInputs, type ResolutionOutcome } from "./resolve.ts";

/**
 * A resolution attempt (see resolve.ts), or a verification or repair of an integration branch (see
 * repair.ts), with the attempt's agent, limits and masking.
 */
export async function runResolution(
  ctx: RunningAttempt,
  resolution: ResolutionInputs,
): Promise<AttemptResult> {
  let turns = 0;
  let costMicros = 0;
  let overBudget = false;
  let gateOutput: string | null = null;
  let said = "";
  const agent = async (prompt: string): Promise<string | null> => {
    ctx.handOver();
    const left = ctx.capMicros == null ? null : ctx.capMicros - Math.max(costMicros, ctx.metered());
    const r = await runClaudeCode({
      bin: ctx.claude.bin,
      cwd: ctx.repoDir,
      env: ctx.claude.env,
      prompt,
      model: ctx.task.primaryAgent.model,
      maxTurns: ctx.claude.maxTurns,
      allowedTools: ctx.claude.allowedTools,
      addDirs: [],
      timeoutMs: ctx.claude.timeoutMs,
      maxBudgetMicros: left,
      log: ctx.log,
      stop: ctx.stop,
      confine: ctx.confine,
      ...(ctx.logFile ? { logFile: ctx.logFile } : {}),
    });
    turns += r.turns;
    costMicros += r.costMicros;
    overBudget ||= r.overBudget;
    said = r.finalText;
    return r.ok ? null : (r.error ?? "Claude Code failed");
  };
  const gate = async (command: string): Promise<GateAnswer> => {
    ctx.log(`gate: ${command}`);
    // The gates run as the agent's user (a verification has no agent before them): the checkout is its.
    ctx.handOver();
    const run = await runGate(command, ctx.repoDir, ctx.gateTimeoutMs, ctx.claude.env, ctx.confine);
    if (run.passed) return null;
    gateOutput = gateTail(ctx.redact(run.output));
    return run.timedOut
      ? {
          reason: `the gate timed out on the merged result: ${command} (did not finish within ${Math.round(ctx.gateTimeoutMs / 1000)} s)`,
          output: gateOutput,
          timedOut: true,
        }
      : { reason: `the gate failed on the merged result: ${command}`, output: gateOutput };
  };
  const repairAgent = async (prompt: string) => ({ failure: await agent(prompt), said });
  let outcome: ResolutionOutcome =
    resolution.kind === "verify"
      ? await verifyLanding(ctx.git, resolution, gate)
      : resolution.kind === "repair"
        ? await repairLanding(ctx.git, resolution, repairAgent, gate)
        : await resolveConflicts(ctx.git, resolution, agent, gate);
  if (!resolution.kind && "handover" in outcome && outcome.handover)
    outcome = await repairResolved(ctx.git, resolution, outcome, repairAgent, gate, ctx.log);
  if (outcome.output) gateOutput = outcome.output.slice(0, 2_000);
  const result = failedAttempt(outcome.reason ?? "");
  return {
    ...result,
    outcome: outcome.ok ? "succeeded" : "failed",
    reason: outcome.reason,
    // A repair's agent says what it changed; a verification has no agent.
    summary: resolution.kind
      ? (outcome.summary ?? null)
      : outcome.files.length
        ? `Resolved conflicts in ${outcome.files.join(", ")}.`
        : "Merged without conflicts.",
    base: outcome.base ?? null,
    costMicros,
    turns,
    gateOutput,
    overBudget: !outcome.ok && overBudget,
    conflicted: outcome.files,
    commit: outcome.commit,
    verdict: outcome.verdict ?? null,
  };
}

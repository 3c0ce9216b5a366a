/**
 * The self-review of a task's work: a fresh, read-only session reads the diff and answers APPROVE, or
 * CHANGES with its findings (run-attempt.ts gives them back to the agent once, then keeps them as
 * concerns).
 */
import type { Micros } from "../graph/amount.ts";
import type { RunningAttempt } from "./attempt.ts";
import { runClaudeCode } from "./claude.ts";
import { tail } from "./gates.ts";

const REVIEW_MARKER = "You are reviewing the work of task";

/** One review pass: a fresh, read-only session that answers APPROVE or CHANGES with findings. */
export async function review(
  ctx: RunningAttempt,
  env: NodeJS.ProcessEnv,
  model: string | null,
): Promise<{ findings: string[]; turns: number; costMicros: Micros }> {
  await ctx.git.git(["add", "--all"]);
  const diff = await ctx.git.git(["diff", "--cached", ctx.baseRef]);
  const prompt = [
    `${REVIEW_MARKER} '${ctx.task.id}'. The task:`,
    "",
    ctx.task.description ?? "(no description)",
    "",
    "The changes, as a diff against the branch the task started from:",
    "",
    "```diff",
    tail(diff, 40_000),
    "```",
    "",
    "Check that the changes do what the task asks, correctly and completely. Answer with a first line",
    "`REVIEW: APPROVE`, or `REVIEW: CHANGES` followed by one finding per line, each starting with `- `.",
  ].join("\n");
  const result = await runClaudeCode({
    bin: ctx.claude.bin,
    cwd: ctx.repoDir,
    env,
    prompt,
    model,
    maxTurns: Math.min(ctx.claude.maxTurns, 20),
    allowedTools: ["Read", "Glob", "Grep", "LS"],
    addDirs: [],
    timeoutMs: ctx.claude.timeoutMs,
    log: (line) => ctx.log(`review: ${line}`),
    stop: ctx.stop,
    confine: ctx.confine,
  });
  const verdict = parseReview(result.ok ? result.finalText : "");
  ctx.log(`review: ${verdict.length === 0 ? "approved" : `${verdict.length} finding(s)`}`);
  return { findings: verdict, turns: result.turns, costMicros: result.costMicros };
}

/** Findings of a review answer; none when it approves. An answer without a verdict is itself a finding. */
export function parseReview(answer: string): string[] {
  const lines = answer.split(/\r?\n/).map((l) => l.trim());
  const verdict = lines.find((l) => /^\**REVIEW:/i.test(l));
  if (verdict && /APPROVE/i.test(verdict)) return [];
  if (!verdict) return ["the reviewer gave no verdict (expected REVIEW: APPROVE or REVIEW: CHANGES)"];
  const findings = lines.filter((l) => l.startsWith("- ")).map((l) => l.slice(2).trim());
  return findings.length > 0 ? findings : ["the reviewer asked for changes without listing them"];
}

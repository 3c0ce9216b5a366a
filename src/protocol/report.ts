/**
 * The one wire format between an attempt and its run: what a job asks the app for (the attempt it
 * is), what an attempt reports back, and the engine events a report stands for. The Action sends it,
 * the app checks it with these schemas, and local mode reads the attempt process's result with them.
 */
import { isCost, MAX_MICROS, microsOfDollars } from "../graph/amount.ts";
import { z } from "zod";
import type { EngineEvent } from "../engine/types.ts";

export const attemptRequestSchema = z.object({
  run: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}\/\d+$/),
  /** A task id, or a resolution's subject (protocol/resolution.ts). */
  task: z
    .string()
    .regex(/^(?:(?:resolve-pr|(?:resolve|verify|repair)-integration)@)?[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$/),
  attempt: z.number().int().positive(),
  /**
   * `OWNER/NAME` of the repository the run lives in (the graph's), when the job runs in another one:
   * its workstream's. Absent: the job's own repository.
   */
  repository: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,38}\/[A-Za-z0-9._-]{1,100}$/)
    .optional(),
});
export type AttemptRequest = z.infer<typeof attemptRequestSchema>;

/** Workflow-only mode: the file the Action writes the report to, inside the run's report artifact. */
export const REPORT_FILE = "report.json";

/**
 * The header with which the runner proves it is the runner: the key the app handed out with the
 * attempt's first token (once per attempt), which the runner keeps in memory and gives no process.
 * A push token and a report are answered only with it.
 */
export const REPORT_KEY_HEADER = "x-agentrelay-report-key";

/**
 * The header with which a runner says it can hold its report: when the task's PR can merge only once
 * the required checks GitHub is running now pass, the app answers `held` and writes nothing, and the
 * runner reports again a little later. Waiting for required CI then costs no state write of its own
 * (the report, the merge and the next dispatch land in one write), at the price of the runner's
 * minutes while it holds, at most REPORT_HOLD_MS.
 */
export const REPORT_HOLD_HEADER = "x-agentrelay-hold";
/** How long a runner holds its report at most, and how often it asks again meanwhile. */
export const REPORT_HOLD_MS = 10 * 60_000;
export const REPORT_HOLD_POLL_MS = 30_000;

const text = z.string().max(20_000);

/** What an attempt hands back, as the engine records it. */
const resultShape = z.object({
  outcome: z.enum(["succeeded", "failed"]),
  /** Finished without changes: the task completes without a PR. */
  noPr: z.boolean(),
  reason: text.nullable(),
  concerns: z.array(text).max(100),
  opsConcerns: z.array(text).max(100),
  summary: text.nullable(),
  outputs: z
    .array(z.object({ path: z.string().max(1000), action: z.string().max(40), category: z.string().max(80) }))
    .max(1000),
  /** What the attempt spent, in micro-dollars (graph/amount.ts). */
  costMicros: z.number().refine(isCost, {
    error: `a cost must be a whole number of micro-dollars from 0 to ${MAX_MICROS}`,
  }),
  turns: z.number().int().nonnegative(),
  gates: z.array(z.object({ n: z.number().int().positive(), passed: z.boolean() })).max(100),
  /** The end of the last gate's output when the attempt failed on it (masked). */
  gateOutput: z.string().max(2_000).nullable().default(null),
  /** The attempt failed because it spent what it was allowed (its cap, --max-budget-usd). */
  overBudget: z.boolean().default(false),
  /**
   * The agent could not work here (Claude Code missing or not logged in, its credential refused, the
   * model API unreachable): not the task's failure, so the attempt does not count and is not retried
   * by itself; the user fixes the cause and retries the task.
   */
  agentUnavailable: z.boolean().default(false),
  /** The files a resolution's merge found conflicting. */
  conflicted: z.array(z.string().max(1000)).max(1000).default([]),
  /** The task branch's head as pushed (null when nothing was pushed). */
  commit: z
    .string()
    .regex(/^[0-9a-f]{40}$/)
    .nullable(),
  /**
   * The target commit a landing job merged into the branch and ran the gates with (a verification, a
   * repair, a resolution that ran gates): with `commit`, the tree that may land.
   */
  base: z
    .string()
    .regex(/^[0-9a-f]{40}$/)
    .nullable()
    .default(null),
  /**
   * A landing job's failure told apart (attempt/gate-verdicts.ts, landing-guards.ts): its gates break,
   * a gate is flaky (the job passed on a rerun), a gate timed out, it changed what judges it, or its
   * target changed a workflow file that no push of agentrelay's may bring (attempt/workflow-landing.ts).
   */
  verdict: z.enum(["break", "flaky", "timed_out", "weakened", "workflows"]).nullable().default(null),
});

/**
 * A result as an Action from before micro-dollars sends it: its cost as `costUsd`, dollars as Claude
 * Code reported them. It is read as the nearest micro-dollar (as that version charged it); a cost that
 * is no amount is left for the schema to refuse.
 */
function fromOlderAction(value: unknown): unknown {
  if (value === null || typeof value !== "object" || "costMicros" in value || !("costUsd" in value))
    return value;
  const { costUsd, ...rest } = value as { costUsd: unknown };
  const micros = typeof costUsd === "number" ? microsOfDollars(costUsd) : null;
  return micros === null ? { ...rest, costMicros: costUsd } : { ...rest, costMicros: micros };
}

export const attemptResultSchema = z.preprocess(fromOlderAction, resultShape);
export type AttemptReportResult = z.infer<typeof resultShape>;

export const attemptReportSchema = attemptRequestSchema.extend({ result: attemptResultSchema });
export type AttemptReport = z.infer<typeof attemptReportSchema>;

/** The report of an attempt: exactly the fields of the wire format, whatever else the result holds. */
export function toReport(request: AttemptRequest, result: AttemptReportResult): AttemptReport {
  // The schema names the fields, so a new one is sent as soon as it is declared.
  const fields = Object.keys(resultShape.shape) as (keyof AttemptReportResult)[];
  return {
    run: request.run,
    task: request.task,
    attempt: request.attempt,
    // Where the run lives, for a job in a workstream's repository: the app reads the run there.
    ...(request.repository ? { repository: request.repository } : {}),
    result: Object.fromEntries(fields.map((key) => [key, result[key]])) as AttemptReportResult,
  };
}

/** The facts a report stands for, in the order the engine takes them. */
export function eventsOfReport(report: Omit<AttemptReport, "run">, at: number): EngineEvent[] {
  const { task, attempt, result: r } = report;
  const facts: EngineEvent[] = r.gates.map((g) => ({
    type: "gate_result",
    task,
    attempt,
    n: g.n,
    passed: g.passed,
    at,
  }));
  if (r.commit) facts.push({ type: "task_branch_pushed", task, attempt, sha: r.commit, at });
  if (r.outcome === "failed") {
    for (const message of r.concerns)
      facts.push({ type: "concern_recorded", task, attempt, kind: "design", message, at });
    // What a failed attempt tells operators (its network refusals, say) is kept too.
    for (const message of r.opsConcerns)
      facts.push({ type: "concern_recorded", task, attempt, kind: "ops", message, at });
    facts.push({
      type: "job_failed",
      task,
      attempt,
      reason: r.reason ?? "failed",
      costMicros: r.costMicros,
      turns: r.turns,
      ...(r.gateOutput ? { gateOutput: r.gateOutput } : {}),
      ...(r.overBudget ? { overBudget: true } : {}),
      ...(r.agentUnavailable ? { agentUnavailable: true } : {}),
      at,
    });
    return facts;
  }
  facts.push({
    type: "job_succeeded",
    task,
    attempt,
    noPr: r.noPr,
    concerns: r.concerns,
    opsConcerns: r.opsConcerns,
    summary: r.summary,
    outputs: r.outputs,
    costMicros: r.costMicros,
    turns: r.turns,
    at,
  });
  return facts;
}

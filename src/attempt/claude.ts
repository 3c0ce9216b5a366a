/**
 * Runs Claude Code headless (`claude -p ... --output-format stream-json --verbose`) with a wall-clock
 * limit, streams its progress to a log, and reads turns, cost and the final answer from its result.
 */
import { dollarsText, type Micros, microsOfDollars, usd } from "../graph/amount.ts";
import { type Confinement, runBounded } from "./bounded.ts";

export interface ClaudeOptions {
  bin: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  prompt: string;
  model: string | null;
  maxTurns: number;
  allowedTools: string[];
  /** Directories outside `cwd` the agent may read and write (the work directory). */
  addDirs: string[];
  timeoutMs: number;
  /** Continue this session (the same conversation) instead of starting a new one. */
  resume?: string | null;
  /** What this call may spend, in micro-dollars (`--max-budget-usd`); absent: no cap. */
  maxBudgetMicros?: Micros | null;
  /** Called with each line of progress, for the job log. */
  log: (line: string) => void;
  /** Stops Claude Code early; `reason` says why (the credential was refused, say). */
  stop?: { signal: AbortSignal; reason: () => string | null };
  /** How the command is confined (see BoundedOptions). */
  confine?: Confinement;
  /** Where the host keeps everything the attempt printed: a failure that quotes only its end names it. */
  logFile?: string;
}

export interface ClaudeResult {
  /** False when the CLI failed, timed out, or reported an error result. */
  ok: boolean;
  timedOut: boolean;
  exitCode: number | null;
  sessionId: string | null;
  finalText: string;
  turns: number;
  /** What Claude Code reported it spent (`total_cost_usd`), to the nearest micro-dollar. */
  costMicros: Micros;
  error: string | null;
  /** Stopped because its budget (--max-budget-usd) was spent. */
  overBudget: boolean;
}

/**
 * The last lines that say something of what Claude Code printed outside its JSON stream (its own
 * complaint, "Not logged in · Please run /login", say), as one line: no blank lines, no stack frames.
 */
export function lastWords(text: string, count = 3): string {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => /[A-Za-z0-9]/.test(line) && !/^at\s/.test(line) && !/^Node\.js v\d/.test(line))
    .slice(-count)
    .map((line) => (line.length > 200 ? `${line.slice(0, 199)}…` : line))
    .join(" / ");
}

function describe(message: { type?: string; message?: { content?: unknown[] } }): string[] {
  if (message.type !== "assistant" || !Array.isArray(message.message?.content)) return [];
  return message.message.content.flatMap((block) => {
    const b = block as { type: string; text?: string; name?: string; input?: Record<string, unknown> };
    if (b.type === "text" && b.text?.trim()) return [`agent: ${b.text.trim().split("\n")[0]}`];
    if (b.type === "tool_use") {
      const detail = b.input?.command ?? b.input?.file_path ?? b.input?.pattern ?? "";
      return [`tool: ${b.name}${detail ? ` ${String(detail).split("\n")[0]}` : ""}`];
    }
    return [];
  });
}

export async function runClaudeCode(options: ClaudeOptions): Promise<ClaudeResult> {
  const args = [
    "-p",
    options.prompt,
    "--output-format",
    "stream-json",
    "--verbose",
    "--max-turns",
    String(options.maxTurns),
    "--permission-mode",
    "acceptEdits",
    "--allowedTools",
    options.allowedTools.join(","),
  ];
  for (const dir of options.addDirs) args.push("--add-dir", dir);
  if (options.model) args.push("--model", options.model);
  if (options.resume) args.push("--resume", options.resume);
  if (options.maxBudgetMicros != null)
    args.push("--max-budget-usd", dollarsText(Math.max(0, options.maxBudgetMicros)));

  let buffer = "";
  // What Claude Code printed outside its JSON stream: its own words when it fails before a result.
  let plain = "";
  let result: Record<string, unknown> | null = null;
  let sessionId: string | null = null;
  const handle = (line: string) => {
    if (!line.trim()) return;
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(line) as Record<string, unknown>;
    } catch {
      options.log(line);
      plain = `${plain}${line}\n`.slice(-4_000);
      return;
    }
    if (typeof message.session_id === "string") sessionId = message.session_id;
    if (message.type === "result") result = message;
    for (const text of describe(message)) options.log(text);
  };
  const run = await runBounded(options.bin, args, {
    cwd: options.cwd,
    env: options.env,
    timeoutMs: options.timeoutMs,
    // The stream is read as it comes (for the log); only its tail is kept.
    maxOutput: 200_000,
    ...(options.confine ? { confine: options.confine } : {}),
    ...(options.stop ? { signal: options.stop.signal } : {}),
    onStdout: (chunk) => {
      buffer += chunk;
      const lines = buffer.split("\n");
      buffer = lines.pop()!;
      lines.forEach(handle);
    },
  });
  handle(buffer);
  const r = result as {
    is_error?: boolean;
    result?: string;
    num_turns?: number;
    total_cost_usd?: number;
    subtype?: string;
  } | null;
  const failed = run.timedOut || run.code !== 0 || !r || r.is_error === true;
  const said = lastWords(`${plain}${run.stderr}`);
  const whole = options.logFile ? `; see ${options.logFile} for all of its output` : "";
  const stopped = options.stop?.signal.aborted ? options.stop.reason() : null;
  // A float Claude Code sums; a value that is not an amount (negative, not finite) counts as nothing.
  const costMicros = microsOfDollars(r?.total_cost_usd ?? 0) ?? 0;
  return {
    ok: !failed,
    timedOut: run.timedOut,
    exitCode: run.code,
    sessionId,
    finalText: r?.result ?? "",
    turns: r?.num_turns ?? 0,
    costMicros,
    overBudget: r?.subtype === "error_max_budget_usd",
    error: stopped
      ? stopped
      : failed
        ? run.timedOut
          ? `Claude Code did not finish within ${Math.round(options.timeoutMs / 1000)} s`
          : r?.subtype === "error_max_budget_usd"
            ? `stopped at its budget of ${usd(options.maxBudgetMicros ?? 0)} (Claude Code spent ${usd(costMicros)})`
            : r?.subtype && r.subtype !== "success"
              ? `Claude Code stopped: ${r.subtype}`
              : r?.is_error && r.result
                ? `Claude Code failed: ${r.result.trim().split("\n")[0]}${whole}`
                : `Claude Code exited with code ${run.code}${said ? `: ${said}` : ""}${whole}`
        : null,
  };
}

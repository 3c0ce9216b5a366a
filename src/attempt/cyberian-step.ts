/**
 * A step compiled from a cyberian workflow, with cyberian's semantics and without its flaws:
 * templates render with the run's params (an undefined variable is an error); the completion status
 * is read from an exact status line of the agent's final answer; `loop_until` repeats in the same
 * session until its status line appears, up to a cap (10 unless `max_iterations` says otherwise) that
 * fails the step when reached; `success_criteria` runs with the params as data and its real output goes
 * back to the agent in `retry_message`, up to `max_retries`; a `provider_call` runs a command the
 * repository declares in `.workflow/providers.yaml`.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, lstatSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import type { CyberianStep } from "../graph/model.ts";
import { loadYaml } from "../graph/yaml.ts";
import {
  completionStatus,
  cyberianPrompt,
  ParamsError,
  renderCyberian,
} from "../protocol/cyberian-prompt.ts";
import type { ClaudeResult } from "./claude.ts";
import { type Confinement, runBounded } from "./bounded.ts";
import { writeInAgentDir } from "./agent-files.ts";
import { runCriteria } from "./criteria.ts";
import { insideRepository, OutsideRepositoryError } from "./paths.ts";

export const DEFAULT_LOOP_CAP = 10;

export interface StepOptions {
  step: CyberianStep;
  params: Record<string, unknown>;
  repoDir: string;
  /** The workflow file's directory in the checkout (scripts and providers are found from there). */
  workflowDir: string;
  loopCap: number;
  /** The session to continue (agent_lifecycle `reuse`), or null for a fresh one. */
  session: string | null;
  timeoutMs: number;
  env: NodeJS.ProcessEnv;
  /** How the commands the step runs are confined (see BoundedOptions). */
  confine?: Confinement;
  agent: (prompt: string, resume: string | null) => Promise<ClaudeResult>;
  log: (line: string) => void;
}

/** null when the step succeeded, else why it failed. */
export async function runCyberianStep(o: StepOptions): Promise<string | null> {
  const { step } = o;
  for (const check of step.preconditions?.filesExist ?? []) {
    for (const pattern of check.patterns) {
      const found = glob(o.repoDir, pattern).length;
      if (found === 0 || (check.minCount !== null && found < check.minCount)) {
        return `precondition failed: ${found} file(s) match '${pattern}' in the checkout${check.minCount !== null ? ` (need ${check.minCount})` : ""}`;
      }
    }
  }
  const criteria = (c: NonNullable<CyberianStep["successCriteria"]>) =>
    runCriteria(c, o.params, {
      cwd: o.repoDir,
      workflowDir: o.workflowDir,
      timeoutMs: o.timeoutMs,
      env: o.env,
      ...(o.confine ? { confine: o.confine } : {}),
    });
  try {
    if (step.providerCall) {
      const failure = await providerCall(step.providerCall, o);
      if (failure) return failure;
      if (!step.successCriteria) return null;
      const verdict = await criteria(step.successCriteria);
      return verdict.passed ? null : verdict.error;
    }

    const tries = (step.successCriteria?.maxRetries ?? 0) + 1;
    let session: string | null = o.session;
    let retryError: string | undefined;
    for (let t = 1; t <= tries; t++) {
      const cap = step.loopUntil?.maxIterations ?? o.loopCap;
      for (let i = 1; ; i++) {
        const prompt = cyberianPrompt(step, {
          params: o.params,
          ...(i === 1 && retryError !== undefined ? { retryError } : {}),
        });
        const run = await o.agent(prompt, session);
        if (!run.ok) return run.error;
        session = run.sessionId ?? session;
        const expected = step.loopUntil ? [step.loopUntil.status] : [];
        const status = completionStatus(run.finalText, expected);
        if (status === "ERROR") return "the agent reported COMPLETION_STATUS: ERROR";
        if (!step.loopUntil || status === step.loopUntil.status.toUpperCase()) break;
        o.log(`loop ${i}/${cap}: no ${step.loopUntil.status} yet`);
        if (i >= cap)
          return `loop_until: the status ${step.loopUntil.status} did not appear within ${cap} iterations`;
      }
      if (!step.successCriteria) return null;
      const verdict = await criteria(step.successCriteria);
      o.log(`success criteria ${t}/${tries}: ${verdict.passed ? "passed" : "failed"}`);
      if (verdict.passed) return null;
      retryError = verdict.error;
    }
    return `Success criteria validation failed after ${tries} attempt(s): ${retryError}`;
  } catch (error) {
    if (error instanceof ParamsError) return `template error in ${error.message}`;
    throw error;
  }
}

/** Runs a provider the repository declares: `providers: {NAME: {command: [argv...]}}` in .workflow/providers.yaml. */
async function providerCall(
  call: NonNullable<CyberianStep["providerCall"]>,
  o: StepOptions,
): Promise<string | null> {
  const file = join(o.workflowDir, "providers.yaml");
  const declared = existsSync(file)
    ? (loadYaml(file, readFileSync(file, "utf8")).value as {
        providers?: Record<string, { command?: unknown }>;
      })
    : {};
  const command = declared.providers?.[call.provider]?.command;
  if (!Array.isArray(command) || command.length === 0 || !command.every((c) => typeof c === "string")) {
    return `provider '${call.provider}' is not declared: add it to ${relative(o.repoDir, file)} as providers: {${call.provider}: {command: [program, args...]}}`;
  }
  const params = Object.fromEntries(
    Object.entries(call.params).map(([k, v]) => [
      k,
      typeof v === "string" ? renderCyberian(v, o.params, `provider_call.params.${k}`) : v,
    ]),
  );
  const output = await runBounded(command[0] as string, command.slice(1) as string[], {
    cwd: o.repoDir,
    env: o.env,
    timeoutMs: o.timeoutMs,
    input: JSON.stringify({ method: call.method, params }),
    ...(o.confine ? { confine: o.confine } : {}),
  });
  if (output.timedOut)
    return `provider '${call.provider}' did not finish within ${Math.round(o.timeoutMs / 1000)} s`;
  if (output.code !== 0)
    return `provider '${call.provider}' failed (exit ${output.code}): ${output.stderr.trim().split("\n").slice(-3).join(" ")}`;
  if (call.outputFile) {
    let target: string;
    try {
      target = insideRepository(
        o.repoDir,
        o.repoDir,
        renderCyberian(call.outputFile, o.params, "provider_call.output_file"),
        "output_file",
      );
    } catch (error) {
      if (error instanceof OutsideRepositoryError) return error.message;
      throw error;
    }
    mkdirSync(dirname(target), { recursive: true });
    writeInAgentDir(target, output.stdout);
    o.confine?.give?.(o.repoDir);
  }
  return null;
}

/** Files under `root` matching a glob with `*`, `**` and `?` (paths relative to root, .git skipped). */
export function glob(root: string, pattern: string): string[] {
  const source = pattern
    .split("/")
    .map((part) =>
      part === "**"
        ? "(?:.*/)?"
        : `${part
            .replace(/[.+^${}()|[\]\\]/g, "\\$&")
            .replace(/\*/g, "[^/]*")
            .replace(/\?/g, "[^/]")}/`,
    )
    .join("")
    .replace(/\/$/, "");
  const matcher = new RegExp(`^${source.replace(/\(\?:\.\*\/\)\?\//g, "(?:.*/)?")}$`);
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      if (name === ".git") continue;
      const path = join(dir, name);
      const rel = relative(root, path);
      // A link is a file here, never a way out of the checkout (or round it, forever).
      if (lstatSync(path).isDirectory()) walk(path);
      else if (matcher.test(rel)) found.push(rel);
    }
  };
  if (existsSync(root)) walk(root);
  return found.sort();
}

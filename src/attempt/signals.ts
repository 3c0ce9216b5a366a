/**
 * The attempt's signal files and the in-job commands that write them (agentrelay's TaskHelper
 * commands, with the same names and flags, so graphs that mention them run unchanged). The agent runs
 * them from its shell; the runner reads the files when the agent stops.
 *
 *   <workDir>/attempts/<n>/.done            line 1 timestamp, line 2 "PR" or "NO_PR"
 *   <workDir>/attempts/<n>/.failed          line 1 timestamp, line 2 the reason
 *   <workDir>/attempts/<n>/concerns.log     one design concern per line
 *   <workDir>/attempts/<n>/ops_concerns.log one ops concern per line
 *   <workDir>/attempts/<n>/summary.md       the agent's summary
 *   <workDir>/outputs.json                  declared outputs (schema_version "1"), kept across attempts
 */
import { appendFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { readAgentFile } from "./agent-files.ts";
import { parseArgs } from "node:util";
import { pathProblem } from "../graph/validate.ts";
import type { OutputsFile } from "../protocol/render.ts";

export const SIGNAL_COMMANDS = [
  "agentrelay-complete",
  "agentrelay-complete-no-pr",
  "agentrelay-failed",
  "agentrelay-concern",
  "agentrelay-ops-concern",
  "agentrelay-summary",
  "agentrelay-declare",
] as const;

export type SignalCommand = (typeof SIGNAL_COMMANDS)[number];

export interface AttemptSignals {
  done: { noPr: boolean } | null;
  failed: string | null;
  concerns: string[];
  opsConcerns: string[];
  summary: string | null;
  outputs: OutputsFile["files"];
}

/** One line of text: a concern or reason never spans lines in the signal files. */
const oneLine = (text: string) => text.replace(/\s*[\r\n]+\s*/g, " ").trim();

function readLines(file: string): string[] {
  return (readAgentFile(file) ?? "")
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
}

/** The declared outputs: an empty list until the agent declares one. */
const NO_OUTPUTS = (): OutputsFile => ({ schema_version: "1", files: [] });

export function readOutputs(workDir: string): OutputsFile {
  const text = readAgentFile(join(workDir, "outputs.json"));
  return text === null || text.trim() === "" ? NO_OUTPUTS() : (JSON.parse(text) as OutputsFile);
}

/**
 * Where the agent hands work back when it runs as a user of its own (agent-user.ts): its attempt's
 * signal directory and `outputs.json` become its own, in a work directory that stays the runner's
 * (so the agent cannot put a link in place of the signal directory).
 */
export function signalPaths(workDir: string, attempt: number): string[] {
  const outputs = join(workDir, "outputs.json");
  if (!existsSync(outputs)) writeFileSync(outputs, `${JSON.stringify(NO_OUTPUTS(), null, 2)}\n`);
  return [join(workDir, "attempts", String(attempt)), outputs];
}

/**
 * What the agent handed back in one attempt. `.done` wins over `.failed`, as in agentrelay. The files
 * are the agent's: read without following links or waiting on a FIFO (agent-files.ts).
 */
export function readSignals(workDir: string, attempt: number): AttemptSignals {
  const dir = join(workDir, "attempts", String(attempt));
  const doneLines = readAgentFile(join(dir, ".done"))?.split("\n") ?? null;
  const failedLines = readAgentFile(join(dir, ".failed"))?.split("\n") ?? null;
  const summary = readAgentFile(join(dir, "summary.md"))?.trim() ?? "";
  return {
    done: doneLines ? { noPr: doneLines[1]?.trim() === "NO_PR" } : null,
    failed: doneLines
      ? null
      : failedLines
        ? failedLines[1]?.trim() || "the agent gave up without a reason"
        : null,
    concerns: readLines(join(dir, "concerns.log")),
    opsConcerns: readLines(join(dir, "ops_concerns.log")),
    summary: summary || null,
    outputs: readOutputs(workDir).files,
  };
}

export class SignalUsageError extends Error {
  override name = "SignalUsageError";
}

/**
 * Runs one in-job command. `signalDir` is `$AGENTRELAY_SIGNAL_DIR` (the attempt's directory); the
 * work directory holding `outputs.json` is two levels up.
 */
export function runSignalCommand(
  command: string,
  argv: string[],
  signalDir: string | undefined,
  now = new Date(),
): string {
  if (!signalDir)
    throw new SignalUsageError(
      "AGENTRELAY_SIGNAL_DIR is not set: run this command inside an agentrelay task",
    );
  mkdirSync(signalDir, { recursive: true });
  const workDir = dirname(dirname(signalDir));
  const stamp = now.toISOString();
  const options = {
    title: { type: "string" },
    body: { type: "string" },
    reason: { type: "string" },
    message: { type: "string" },
    path: { type: "string" },
    action: { type: "string" },
    category: { type: "string" },
  } as const;
  const { values } = parseArgs({ args: argv, options, allowPositionals: false });
  const need = (name: keyof typeof values) => {
    const value = values[name];
    if (!value?.trim()) throw new SignalUsageError(`${command} needs --${name}`);
    return value;
  };

  switch (command as SignalCommand) {
    case "agentrelay-complete":
      // --title and --body are accepted as agentrelay's command takes them; the app names the PR.
      writeFileSync(join(signalDir, ".done"), `${stamp}\nPR\n`);
      return "Recorded: done; the runner commits your changes and the app opens the pull request.";
    case "agentrelay-complete-no-pr":
      writeFileSync(join(signalDir, ".done"), `${stamp}\nNO_PR\n`);
      return "Recorded: done without changes.";
    case "agentrelay-failed":
      writeFileSync(join(signalDir, ".failed"), `${stamp}\n${oneLine(need("reason"))}\n`);
      return "Recorded: failed.";
    case "agentrelay-concern":
      appendFileSync(join(signalDir, "concerns.log"), `${oneLine(need("message"))}\n`);
      return "Recorded a design concern.";
    case "agentrelay-ops-concern":
      appendFileSync(join(signalDir, "ops_concerns.log"), `${oneLine(need("message"))}\n`);
      return "Recorded an ops concern.";
    case "agentrelay-summary":
      writeFileSync(join(signalDir, "summary.md"), `${need("message").trim()}\n`);
      return "Recorded the summary.";
    case "agentrelay-declare": {
      const path = need("path").trim();
      const action = need("action").trim();
      const category = need("category").trim();
      const problem = pathProblem(path);
      if (problem) throw new SignalUsageError(problem);
      if (!["created", "modified", "deleted"].includes(action)) {
        throw new SignalUsageError(`--action must be created, modified or deleted, not '${action}'`);
      }
      const outputs = readOutputs(workDir);
      outputs.files.push({ path, action: action as "created", category });
      writeFileSync(join(workDir, "outputs.json"), `${JSON.stringify(outputs, null, 2)}\n`);
      return `Declared ${path} (${action}, ${category}).`;
    }
    default:
      throw new SignalUsageError(`unknown command '${command}'; known: ${SIGNAL_COMMANDS.join(", ")}`);
  }
}

/** Writes `agentrelay-*` shims into `binDir`, each running `node <entry> signal <name> "$@"`. */
export function writeSignalShims(binDir: string, entry: string): void {
  mkdirSync(binDir, { recursive: true });
  for (const name of SIGNAL_COMMANDS) {
    const script = `#!/bin/sh\nexec "${process.execPath}" "${entry}" signal ${name} "$@"\n`;
    writeFileSync(join(binDir, name), script, { mode: 0o755 });
  }
}

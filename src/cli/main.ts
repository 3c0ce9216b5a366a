/**
 * The `agentrelay` command line. Each command lives in its own module; this file only parses
 * arguments and maps errors to exit codes (0 ok, 1 invalid input, 2 usage error).
 */
import { parseArgs } from "node:util";
import { formatIssue, GraphError } from "../graph/errors.ts";
import { runSignalCommand, SignalUsageError } from "../attempt/signals.ts";
import { graphJsonSchema } from "../graph/schema.ts";
import { CredentialError } from "../local/credentials.ts";
import { initCommand } from "./commands/init.ts";
import { planCommand } from "./commands/plan.ts";
import { renderCommand } from "./commands/render.ts";
import { runCommand } from "./commands/run.ts";
import { attemptProcess } from "../attempt/attempt-process.ts";
import { simulateCommand } from "./commands/simulate.ts";
import { validateCommand } from "./commands/validate.ts";
import { type Io, parseParams, processIo, UsageError } from "./io.ts";

const USAGE = `usage: agentrelay <command> [options]

commands:
  validate FILE...                       check graph files; one line per error as FILE:LINE:COL: message
  plan FILE [--json]                     print the order, waves, workstreams and a mermaid diagram
  render FILE TASK_ID [--attempt N] [--out DIR] [--param KEY=VALUE]...
                                         write manifest.json, policies.json and instructions.md
  run FILE --repo DIR [--scripted-model] [--credentials FILE] [--anthropic-credential NAME]
      [--param KEY=VALUE]... [--claude PATH] [--max-turns N] [--verbose]
                                         run a graph against a local git repository with Claude Code
  simulate FILE [--fail TASK[:N]]... [--concern TASK]... [--json]
                                         run the engine with simulated agents: what happens if a task fails?
  schema                                 print the JSON Schema of the agentrelay graph dialect
  init [--repo DIR] [--force]            install the task workflow and a sample graph in a repository
`;

export async function main(argv: string[], io: Io = processIo): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "validate": {
        const { positionals } = parseArgs({ args: rest, allowPositionals: true, options: {} });
        if (positionals.length === 0) throw new UsageError("validate needs at least one FILE");
        return validateCommand(positionals, io);
      }
      case "plan": {
        const { positionals, values } = parseArgs({
          args: rest,
          allowPositionals: true,
          options: { json: { type: "boolean" } },
        });
        if (positionals.length !== 1) throw new UsageError("plan needs exactly one FILE");
        return planCommand(positionals[0]!, values.json ?? false, io);
      }
      case "render": {
        const { positionals, values } = parseArgs({
          args: rest,
          allowPositionals: true,
          options: {
            attempt: { type: "string", default: "1" },
            out: { type: "string" },
            param: { type: "string", multiple: true, default: [] },
          },
        });
        if (positionals.length !== 2) throw new UsageError("render needs FILE and TASK_ID");
        return renderCommand(
          positionals[0]!,
          positionals[1]!,
          { attempt: Number(values.attempt), out: values.out, params: parseParams(values.param) },
          io,
        );
      }
      case "simulate": {
        const { positionals, values } = parseArgs({
          args: rest,
          allowPositionals: true,
          options: {
            fail: { type: "string", multiple: true, default: [] },
            concern: { type: "string", multiple: true, default: [] },
            json: { type: "boolean" },
          },
        });
        if (positionals.length !== 1) throw new UsageError("simulate needs exactly one FILE");
        return simulateCommand(
          positionals[0]!,
          { fail: values.fail, concern: values.concern, json: values.json ?? false },
          io,
        );
      }
      case "run": {
        const { positionals, values } = parseArgs({
          args: rest,
          allowPositionals: true,
          options: {
            repo: { type: "string" },
            "scripted-model": { type: "boolean" },
            claude: { type: "string" },
            "max-turns": { type: "string" },
            verbose: { type: "boolean" },
            credentials: { type: "string" },
            "anthropic-credential": { type: "string" },
            param: { type: "string", multiple: true, default: [] },
          },
        });
        if (positionals.length !== 1 || !values.repo) throw new UsageError("run needs FILE and --repo DIR");
        return await runCommand(
          positionals[0]!,
          {
            repo: values.repo,
            scriptedModel: values["scripted-model"] ?? false,
            claude: values.claude,
            maxTurns: values["max-turns"] ? Number(values["max-turns"]) : undefined,
            verbose: values.verbose ?? false,
            credentials: values.credentials,
            anthropicCredential: values["anthropic-credential"],
            params: parseParams(values.param),
          },
          io,
        );
      }
      case "attempt":
        // Local mode runs each attempt as a child process: `agentrelay attempt SPEC.json`.
        return await attemptProcess(rest[0] ?? "");
      case "signal":
        // The in-job commands (agentrelay-concern, ...) call this through their shims.
        try {
          io.out(runSignalCommand(rest[0] ?? "", rest.slice(1), process.env.AGENTRELAY_SIGNAL_DIR));
          return 0;
        } catch (error) {
          if (
            !(error instanceof SignalUsageError) &&
            !(error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")
          )
            throw error;
          io.err(`${rest[0]}: ${(error as Error).message}`);
          return 1;
        }
      case "init": {
        const { values } = parseArgs({
          args: rest,
          options: { repo: { type: "string", default: "." }, force: { type: "boolean" } },
        });
        return initCommand(values.repo, values.force ?? false, io);
      }
      case "schema":
        io.out(JSON.stringify(graphJsonSchema(), null, 2));
        return 0;
      case undefined:
      case "help":
      case "--help":
      case "-h":
        io.out(USAGE);
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown command '${command}'`);
    }
  } catch (error) {
    if (error instanceof GraphError) {
      for (const issue of error.issues) io.out(formatIssue(issue));
      return 1;
    }
    if (error instanceof CredentialError) {
      io.err(`agentrelay: ${error.message}`);
      return 1;
    }
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      io.err(`agentrelay: ${(error as Error).message}\n\n${USAGE}`);
      return 2;
    }
    throw error;
  }
}

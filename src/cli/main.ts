/**
 * The `agentrelay` command line. This file only knows the commands' names, usage and options; each
 * command's module is loaded when it runs, so that `agentrelay validate` loads the graph loader and
 * nothing else. The exit codes are EXIT_CODES, which `--help` prints and the docs list.
 */
import { AMOUNT_FORM, parseUsd } from "../graph/amount.ts";
import { formatIssue, GraphError } from "../graph/errors.ts";
import { nearestKey } from "../graph/schema-issues.ts";
import pkg from "../../package.json" with { type: "json" };
import {
  EXIT,
  type Io,
  keepGoingWithoutReader,
  parseParams,
  processIo,
  repoOptions,
  UsageError,
} from "./io.ts";
import {
  CONFORMANCE_OPTIONS,
  DOCTOR_OPTIONS,
  INIT_OPTIONS,
  NEW_RUN,
  RENDER_OPTIONS,
  REPO,
  RUN_OPTIONS,
  SIMULATE_OPTIONS,
} from "./option-specs.ts";
import { type OptionSpecs, optionsHelp, readOptions, type Values } from "./options.ts";

interface Command {
  usage: string;
  summary: string;
  options: OptionSpecs;
  /** How many positionals the command takes: [fewest, most]. */
  positionals: [number, number];
  run(positionals: string[], values: Values, io: Io): Promise<number>;
  /** Commands other programs call (local mode's attempt process, the agent's in-job commands). */
  internal?: boolean;
}

const str = (v: Values[string]) => (typeof v === "string" ? v : undefined);
const list = (v: Values[string]) => (Array.isArray(v) ? v : []);

const RUN_FLAGS =
  "[--repo NAME=PATH]... [--repos FILE] [--scripted-model] [--credentials FILE]\n" +
  "      [--anthropic-credential NAME] [--param KEY=VALUE]... [--claude PATH] [--max-turns N] [--verbose]";

function repoOf(command: string, values: Values): string {
  const repo = str(values.repo);
  if (!repo) throw new UsageError(`${command} needs --repo DIR`);
  return repo;
}

/**
 * A run's clones: `--repo DIR` (the graph's own), and for each other repository `--repo NAME=PATH` or
 * a line of `--repos FILE`.
 */
function reposOf(command: string, values: Values) {
  const { own, elsewhere } = repoOptions(list(values.repo));
  if (!own) throw new UsageError(`${command} needs --repo DIR`);
  const file = str(values.repos);
  return { repo: own, repositories: elsewhere, ...(file ? { repositoriesFile: file } : {}) };
}

function runOptions(command: string, values: Values) {
  const maxTurns = str(values["max-turns"]);
  return {
    ...reposOf(command, values),
    scriptedModel: values["scripted-model"] === true,
    claude: str(values.claude),
    maxTurns: maxTurns ? Number(maxTurns) : undefined,
    verbose: values.verbose === true,
    credentials: str(values.credentials),
    anthropicCredential: str(values["anthropic-credential"]),
    params: parseParams(list(values.param)),
  };
}

/** `retry|cancel|reset`: to the live runner, else the run resumes here with the command first. */
function steering(
  verb: "retry" | "cancel" | "reset",
  usage: string,
  summary: string,
  positionals: [number, number],
): Command {
  return {
    usage: `${usage} --repo DIR ${RUN_FLAGS}`,
    summary: `${summary} (a live runner applies it; otherwise the run resumes here)`,
    options: RUN_OPTIONS,
    positionals,
    run: async ([file, task], values, io) =>
      (await import("./commands/steer.ts")).steerCommand(
        file!,
        { command: verb, ...(task ? { task } : {}) },
        runOptions(verb, values),
        io,
      ),
  };
}

/** Micro-dollars given on the command line in dollars (`5`, `+5`, `$0.50`), or undefined if absent. */
function dollars(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const amount = parseUsd(text.replace(/^\+/, ""));
  if ("error" in amount) throw new UsageError(`${flag} expects ${AMOUNT_FORM}, got '${text}'`);
  return amount.micros;
}

/** `budget +USD [TARGET]` as a steering command, named once so that it applies once. */
function budgetCommand(amount: string, target: string | undefined) {
  if (!amount.startsWith("+"))
    throw new UsageError(`say how much to add with a plus sign, e.g. +5 (got '${amount}')`);
  const micros = dollars("budget", amount)!;
  // The global Web Crypto, which node loads when first used: importing node:crypto here loaded all of
  // it for every command (bench/cli-startup).
  return { command: "budget" as const, micros, ...(target ? { target } : {}), id: crypto.randomUUID() };
}

export const COMMANDS: Record<string, Command> = {
  validate: {
    usage: "validate FILE...",
    summary: "check graph files; one line per error as FILE:LINE:COL: message",
    options: {},
    positionals: [1, Infinity],
    run: async (files, _, io) => (await import("./commands/validate.ts")).validateCommand(files, io),
  },
  plan: {
    usage: "plan FILE [--json]",
    summary: "print the order, waves, workstreams and a mermaid diagram",
    options: { json: { type: "boolean", help: "print the plan as one JSON object" } },
    positionals: [1, 1],
    run: async ([file], values, io) =>
      (await import("./commands/plan.ts")).planCommand(file!, values.json === true, io),
  },
  render: {
    usage: "render FILE TASK_ID [--attempt N] [--out DIR] [--param KEY=VALUE]...",
    summary: "write manifest.json, policies.json and instructions.md: what the agent is told",
    options: RENDER_OPTIONS,
    positionals: [2, 2],
    run: async ([file, task], values, io) =>
      (await import("./commands/render.ts")).renderCommand(
        file!,
        task!,
        { attempt: Number(values.attempt), out: str(values.out), params: parseParams(list(values.param)) },
        io,
      ),
  },
  run: {
    usage: `run FILE --repo DIR [--new-run] ${RUN_FLAGS}`,
    summary: "run a graph against a local git repository with Claude Code (again: resume it)",
    options: { ...RUN_OPTIONS, "new-run": NEW_RUN },
    positionals: [1, 1],
    run: async ([file], values, io) =>
      (await import("./commands/run.ts")).runCommand(
        file!,
        { ...runOptions("run", values), newRun: values["new-run"] === true },
        io,
      ),
  },
  status: {
    usage: "status FILE --repo DIR [--json]",
    summary: "show a local run: each task and workstream, what it waits for, whether a runner is live",
    options: {
      repo: REPO,
      json: { type: "boolean", help: "print the run's state, spend rows and cost per merged result as JSON" },
    },
    positionals: [1, 1],
    run: async ([file], values, io) =>
      (await import("./commands/steer.ts")).statusCommand(file!, repoOf("status", values), io, {
        json: values.json === true,
      }),
  },
  clean: {
    usage: "clean FILE --repo DIR [--repo NAME=PATH]... [--repos FILE]",
    summary:
      "remove what a finished local run left: worktrees, branches (unmerged work kept under an archive ref)",
    options: { repo: RUN_OPTIONS.repo!, repos: RUN_OPTIONS.repos! },
    positionals: [1, 1],
    run: async ([file], values, io) => {
      const { repo, repositories, repositoriesFile } = reposOf("clean", values);
      return (await import("./commands/clean.ts")).cleanCommand(
        file!,
        repo,
        repositories,
        io,
        repositoriesFile,
      );
    },
  },
  retry: steering("retry", "retry FILE TASK", "run a failed or cancelled task again", [2, 2]),
  cancel: steering("cancel", "cancel FILE [TASK]", "cancel a task, or the whole run", [1, 2]),
  reset: steering("reset", "reset FILE TASK", "undo the tip task of a workstream and run it afresh", [2, 2]),
  budget: {
    usage: `budget FILE +USD [WORKSTREAM|TASK] --repo DIR ${RUN_FLAGS}`,
    summary:
      "raise the run's budget (or a workstream's or task's) and go on (a live runner applies it; otherwise the run resumes here)",
    options: RUN_OPTIONS,
    positionals: [2, 3],
    run: async ([file, amount, target], values, io) =>
      (await import("./commands/steer.ts")).steerCommand(
        file!,
        budgetCommand(amount!, target),
        runOptions("budget", values),
        io,
      ),
  },
  simulate: {
    usage:
      "simulate FILE [--fail TASK[:N]]... [--concern TASK]... [--conflict TASK[:N]]... [--conflict-integration WS[:N]]... [--cost-per-attempt USD] [--at EVENTS] [--json | --markdown]",
    summary: "run the engine with simulated agents: what happens if a task fails?",
    options: SIMULATE_OPTIONS,
    positionals: [1, 1],
    run: async ([file], values, io) =>
      (await import("./commands/simulate.ts")).simulateCommand(
        file!,
        {
          fail: list(values.fail),
          concern: list(values.concern),
          json: values.json === true,
          markdown: values.markdown === true,
          costPerAttempt: dollars("--cost-per-attempt", str(values["cost-per-attempt"])),
          conflictIntegration: list(values["conflict-integration"]),
          conflict: list(values.conflict),
          at: str(values.at),
        },
        io,
      ),
  },
  schema: {
    usage: "schema",
    summary: "print the JSON Schema of the agentrelay graph dialect",
    options: {},
    positionals: [0, 0],
    run: async (_, __, io) => {
      io.out(JSON.stringify((await import("../graph/schema.ts")).graphJsonSchema(), null, 2));
      return 0;
    },
  },
  init: {
    usage:
      "init [--no-app [--gh]] [--repo DIR] [--release vX.Y.Z] [--action OWNER/REPO@REF] [--image IMAGE] [--force]",
    summary:
      "set up a repository: the task workflow (with --no-app, also the orchestrator workflow: no app to host), a small sample graph, and .gitignore's line for local runs",
    options: INIT_OPTIONS,
    positionals: [0, 0],
    run: async (_, values, io) =>
      (await import("./commands/init.ts")).initCommand(
        {
          repo: str(values.repo),
          release: str(values.release),
          action: str(values.action),
          image: str(values.image),
          force: values.force === true,
          noApp: values["no-app"] === true,
          gh: values.gh === true,
        },
        io,
      ),
  },
  doctor: {
    usage: "doctor [--repo OWNER/NAME] [--api-url URL]",
    summary:
      "read the GitHub repository's settings and name, one line each with its fix, what would stall a run or skip work (token: GITHUB_TOKEN, GH_TOKEN or `gh auth token`)",
    options: DOCTOR_OPTIONS,
    positionals: [0, 0],
    run: async (_, values, io) =>
      (await import("./commands/doctor.ts")).doctorCommand(
        { repo: str(values.repo), apiUrl: str(values["api-url"]) },
        io,
      ),
  },
  conformance: {
    usage: "conformance [--repo OWNER/NAME] [--api-url URL] [--actions]",
    summary:
      "check, on scratch branches of a repository you administer, each GitHub rule agentrelay relies on, and print what GitHub documents beside what it does (token: GITHUB_TOKEN, GH_TOKEN or `gh auth token`)",
    options: CONFORMANCE_OPTIONS,
    positionals: [0, 0],
    run: async (_, values, io) =>
      (await import("./commands/conformance.ts")).conformanceCommand(
        { repo: str(values.repo), apiUrl: str(values["api-url"]), actions: values.actions === true },
        io,
      ),
  },
  attempt: {
    usage: "attempt SPEC.json",
    summary: "run one attempt (local mode starts it)",
    options: {},
    positionals: [1, 1],
    internal: true,
    run: async ([spec]) => (await import("../attempt/attempt-process.ts")).attemptProcess(spec!),
  },
  "egress-namespace": {
    usage: "egress-namespace",
    summary: "hold an attempt's network namespace (the attempt runner starts it through unshare)",
    options: {},
    positionals: [0, 0],
    internal: true,
    run: async () => (await import("../attempt/egress/namespace.ts")).holdNamespace(),
  },
};

/** What each exit code means: `--help` prints this table, and every command keeps to it. */
export const EXIT_CODES: [code: number, meaning: string][] = [
  [EXIT.ok, "ok: done as asked; where a command shows or carries on a run, the run succeeded"],
  [
    EXIT.failed,
    "failed: invalid input (a graph, a task it lacks, no repository), the agent check, a refused command, or a run that did not succeed",
  ],
  [
    EXIT.usage,
    "usage: an unknown command or option, an option value of the wrong form, or missing or extra arguments",
  ],
  [EXIT.waiting, "not finished: the run waits for you (a merge, a budget, a conflict) or a runner is live"],
  [EXIT.interrupted, "interrupted (Ctrl-C): run the same command again to resume"],
];

const oneLine = (text: string) => text.replace(/\s*\n\s*/g, " ").trim();

/** Errors that say what to do in their one line: printed as they are, exit code 1. */
const USER_ERRORS = new Set([
  "InputError",
  "CredentialError",
  "RunLockedError",
  "LocalRunError",
  "AgentUnavailableError",
  "StateDamageError",
  "DoctorError",
  "ConformanceError",
]);

const exitCodeLines = () => EXIT_CODES.map(([code, meaning]) => `  ${String(code).padEnd(4)} ${meaning}`);

/** `agentrelay COMMAND --help`: its usage, what it does, each option, the exit codes. */
function commandHelp(command: Command): string {
  const options = optionsHelp(command.options);
  return [
    `usage: agentrelay ${command.usage}`,
    "",
    command.summary,
    "",
    "options:",
    ...options,
    "",
    "exit codes:",
    ...exitCodeLines(),
    "",
  ].join("\n");
}

export function usage(): string {
  const lines = ["usage: agentrelay <command> [options]", "", "commands:"];
  for (const command of Object.values(COMMANDS)) {
    if (command.internal) continue;
    lines.push(`  ${command.usage}`, `      ${command.summary}`);
  }
  lines.push("", "exit codes:", ...exitCodeLines());
  lines.push("", "`agentrelay COMMAND --help` shows one command, `agentrelay --version` the version.");
  return `${lines.join("\n")}\n`;
}

export async function main(argv: string[], io: Io = processIo): Promise<number> {
  if (io === processIo) keepGoingWithoutReader();
  const [name, ...rest] = argv;
  try {
    if (name === undefined || name === "help" || name === "--help" || name === "-h") {
      io.out(usage());
      return name === undefined ? EXIT.usage : EXIT.ok;
    }
    if (name === "--version" || name === "-v" || name === "version") {
      io.out(`agentrelay ${pkg.version}`);
      return EXIT.ok;
    }
    if (name === "signal") return (await import("./commands/signal.ts")).signalCommand(rest, io);
    const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
    if (!command) {
      if (name.startsWith("-")) {
        const near = nearestKey(name.replace(/^--?/, ""), ["help", "version"]);
        throw new UsageError(`unknown option ${name}${near ? ` (did you mean --${near}?)` : ""}`);
      }
      const near = nearestKey(name, Object.keys(COMMANDS));
      throw new UsageError(`unknown command '${name}'${near ? ` (did you mean \`${near}\`?)` : ""}`);
    }
    if (rest.includes("--help") || rest.includes("-h")) {
      io.out(commandHelp(command));
      return EXIT.ok;
    }
    const { positionals, values } = readOptions(name, rest, command.options);
    const [fewest, most] = command.positionals;
    if (positionals.length < fewest || positionals.length > most)
      throw new UsageError(`usage: agentrelay ${command.usage}`);
    return await command.run(positionals, values, io);
  } catch (error) {
    if (error instanceof GraphError) {
      for (const issue of error.issues) io.out(formatIssue(issue));
      return EXIT.failed;
    }
    if (USER_ERRORS.has((error as Error).name)) {
      io.err(`agentrelay: ${oneLine((error as Error).message)}`);
      return EXIT.failed;
    }
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      const help = name && COMMANDS[name] ? `agentrelay ${name} --help` : "agentrelay --help";
      io.err(`agentrelay: ${oneLine((error as Error).message)} (see \`${help}\`)`);
      return EXIT.usage;
    }
    // Anything else is still one line; the stack is there for whoever debugs it.
    if (process.env.AGENTRELAY_DEBUG) io.err(String((error as Error).stack ?? error));
    io.err(
      `agentrelay: ${oneLine((error as Error).message ?? String(error))} (AGENTRELAY_DEBUG=1 shows where it happened)`,
    );
    return EXIT.failed;
  }
}

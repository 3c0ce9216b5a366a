/**
 * A command's options: what each takes and means (its `--help` lists them), and the command line
 * read against them. A misspelled option gets the nearest one, a value of the wrong form is named
 * with the form it needs, before the command runs (a usage error, exit code 2).
 */
import { parseArgs } from "node:util";
import { nearestKey } from "../graph/schema-issues.ts";
import { UsageError } from "./io.ts";

export interface OptionSpec {
  type: "string" | "boolean";
  multiple?: boolean;
  default?: string | string[];
  /** What a string option takes, as usage lines name it (DIR, N, TASK[:N]). */
  value?: string;
  /** One line for `--help`. */
  help: string;
  /** The form a value must have: null when it has it, else what it needs ("a whole number from 1"). */
  check?: (value: string) => string | null;
}

export type OptionSpecs = Record<string, OptionSpec>;
export type Values = Record<string, string | boolean | string[] | undefined>;

/** Every command answers these, though no command declares them. */
const UNIVERSAL = ["help"];

/** A whole number from 1 (`--max-turns`, `--attempt`). */
export const wholeNumber = (value: string) => (/^[1-9]\d{0,8}$/.test(value) ? null : "a whole number from 1");

/** Options `args` gives that `options` does not take (with the nearest it does), or a value missing or misplaced. */
function optionProblem(command: string, args: readonly string[], options: OptionSpecs): string | null {
  const names = Object.keys(options);
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") break;
    if (!arg.startsWith("-") || arg === "-") continue;
    const name = arg.replace(/^--?/, "").split("=")[0]!;
    const inline = arg.startsWith("--") && arg.includes("=");
    const option = arg.startsWith("--") && Object.hasOwn(options, name) ? options[name] : undefined;
    if (!option) {
      const near = nearestKey(name, [...names, ...UNIVERSAL]);
      const takes =
        names.length > 0
          ? `\`${command}\` takes ${names.map((n) => `--${n}`).join(", ")}`
          : `\`${command}\` takes no options`;
      return near
        ? `unknown option ${arg.split("=")[0]} (did you mean --${near}?)`
        : `unknown option ${arg.split("=")[0]}; ${takes}`;
    }
    if (option.type === "boolean" && inline) return `--${name} takes no value`;
    if (option.type === "string" && !inline) {
      const next = args[i + 1];
      if (next === undefined || next.startsWith("--")) return `--${name} needs a value`;
      i++;
    }
  }
  return null;
}

/** The command line read against `options`; a usage error names the first thing wrong with it. */
export function readOptions(
  command: string,
  args: string[],
  options: OptionSpecs,
): { positionals: string[]; values: Values } {
  const problem = optionProblem(command, args, options);
  if (problem) throw new UsageError(problem);
  const { positionals, values } = parseArgs({
    args,
    allowPositionals: true,
    options: Object.fromEntries(
      Object.entries(options).map(([name, o]) => [
        name,
        o.type === "boolean"
          ? { type: "boolean" as const }
          : {
              type: "string" as const,
              ...(o.multiple ? { multiple: true } : {}),
              ...(o.default !== undefined ? { default: o.default } : {}),
            },
      ]),
    ),
  });
  for (const [name, option] of Object.entries(options)) {
    const given = values[name];
    for (const value of typeof given === "string" ? [given] : Array.isArray(given) ? given : []) {
      const needs = option.check?.(value);
      if (needs) throw new UsageError(`--${name} expects ${needs}, got '${value}'`);
    }
  }
  return { positionals, values: values as Values };
}

/** The options part of a command's `--help`: one line each, `--help` last. */
export function optionsHelp(options: OptionSpecs): string[] {
  const rows = [
    ...Object.entries(options).map(([name, o]) => [
      `--${name}${o.value ? ` ${o.value}` : ""}${o.multiple ? "..." : ""}`,
      o.help,
    ]),
    ["--help", "show this help"],
  ];
  const width = Math.max(...rows.map(([flag]) => flag!.length));
  return rows.map(([flag, help]) => `  ${flag!.padEnd(width)}  ${help}`);
}

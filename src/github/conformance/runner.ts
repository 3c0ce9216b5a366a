/**
 * Runs the conformance suite against a repository through an API base URL (github.com, a GitHub
 * Enterprise Server, or the tests' stand-in: the same code, the address aside) and prints what was
 * observed beside what GitHub documents.
 */
import type { GitHubClient } from "../client.ts";
import { messageOf } from "../client.ts";
import { type ActionsTiming, observeActions } from "./actions.ts";
import { EVENT_CASES } from "./event-cases.ts";
import { MERGE_CASES } from "./merge-cases.ts";
import {
  type ActionsObserved,
  type ConformanceCase,
  type Need,
  NotObservable,
  type Observation,
} from "./model.ts";
import { Scratch } from "./scratch.ts";
import { SETTINGS_CASES } from "./settings-cases.ts";

/** Every case, in the order the table lists them. */
export const CASES: ConformanceCase[] = [...EVENT_CASES, ...SETTINGS_CASES, ...MERGE_CASES];

export interface Row {
  case: ConformanceCase;
  /** What was seen, or why it was not run. */
  observation: Observation | { notRun: string };
}

export interface ConformanceRun {
  rows: Row[];
  /** What the clean-up could not undo, one line each (empty when everything was). */
  leftOver: string[];
}

const NEEDS_WORDS: Partial<Record<Need, string>> = {
  actions: "Actions minutes and workflow files on the default branch",
  "default-branch": "",
};

export async function runConformance(options: {
  person: GitHubClient;
  server: GitHubClient | null;
  repository: string;
  /** Names the scratch branch (agentrelay-conformance/<id>/…). */
  id: string;
  /** Cases to run (all by default). */
  only?: (c: ConformanceCase) => boolean;
  /** Told as each case ends. */
  progress?: (row: Row) => void;
  /** Runs the cases that need Actions minutes and a commit on the default branch (opt-in), so timed. */
  actions?: ActionsTiming;
}): Promise<ConformanceRun> {
  const [owner, repo] = options.repository.split("/") as [string, string];
  // Asked once: a GitHub that cannot be reached is said at once, not after the retries of a 5xx.
  const { data } = await options.person.rest.repos.get({ owner, repo, request: { retries: 0 } });
  const scratch = new Scratch(options.person, owner, repo, data.default_branch, options.id);
  const probe = {
    owner,
    repo,
    defaultBranch: data.default_branch,
    person: options.person,
    server: options.server,
    base: () => scratch.base(),
    pull: (name: string, files?: Record<string, string>) => scratch.pull(name, files),
    commit: (files: Record<string, string | null>, parent?: string) => scratch.commit(files, parent),
    ruleset: (name: string, rules: object[]) => scratch.ruleset(name, rules),
    undo: (what: string, run: () => Promise<unknown>) => scratch.undo(what, run),
    actions: (): Promise<ActionsObserved> => (session ??= observeActions(probe, options.actions!)),
  };
  let session: Promise<ActionsObserved> | null = null;
  const rows: Row[] = [];
  let failure: { id: string; error: unknown } | null = null;
  for (const c of CASES.filter(options.only ?? (() => true))) {
    let observation: Row["observation"];
    if (!c.run) {
      const needs = c.needs.map((n) => NEEDS_WORDS[n]).filter(Boolean);
      observation = { notRun: `needs ${needs.join(", ") || "Actions"}: observe by hand (docs/github.md)` };
    } else if (c.needs.includes("actions") && !options.actions) {
      observation = { notRun: `needs ${NEEDS_WORDS.actions}: opt in with --actions` };
    } else {
      try {
        observation = await c.run(probe);
      } catch (error) {
        if (!(error instanceof NotObservable)) {
          failure = { id: c.id, error };
          break;
        }
        observation = { notRun: error.message };
      }
    }
    const row = { case: c, observation };
    rows.push(row);
    options.progress?.(row);
  }
  // Whatever happened, the scratch goes.
  const leftOver = await scratch.cleanUp();
  if (failure)
    throw new ConformanceFailure(`${failure.id}: ${messageOf(failure.error)}`, leftOver, {
      cause: failure.error,
    });
  return { rows, leftOver };
}

/** A case that failed for another reason than a rule (GitHub unreachable, a token refused): what was left. */
export class ConformanceFailure extends Error {
  override name = "ConformanceFailure";
  constructor(
    message: string,
    readonly leftOver: string[],
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

/** The table: rule, documented, observed (or why not), as markdown that reads in a terminal too. */
export function conformanceTable(rows: Row[]): string {
  const lines = ["| case | rule | documented | observed |", "|---|---|---|---|"];
  for (const { case: c, observation } of rows) {
    const documented = `${c.documentation === "documented" ? "yes" : "no"}: ${c.expected}`;
    const observed =
      "notRun" in observation
        ? `not run: ${observation.notRun}`
        : `${observation.verdict === "as documented" ? "as expected" : observation.verdict.toUpperCase()}: ${observation.observed}`;
    lines.push(`| ${c.id} | ${cell(c.rule)} | ${cell(documented)} | ${cell(observed)} |`);
  }
  return lines.join("\n");
}

/** The rows whose observation differs from what the case expects. */
export const departures = (rows: Row[]): Row[] =>
  rows.filter((r) => !("notRun" in r.observation) && r.observation.verdict !== "as documented");

/**
 * What each command's options take and mean: `--help` lists them, and a value of the wrong form is a
 * usage error before the command runs.
 */
import { AMOUNT_FORM, parseUsd } from "../graph/amount.ts";
import { type OptionSpec, type OptionSpecs, wholeNumber } from "./options.ts";

/** `ID[:N]` (`--fail TASK[:N]`): an id, and how many times. */
const idCount = (what: string) => (value: string) =>
  /^[^:]+(?::\d{1,9})?$/.test(value) ? null : `${what} or ${what}:N`;

/** What `init` writes into a workflow: checked here, since it lands in YAML. */
const RELEASE_TAG = /^v\d+\.\d+\.\d+$/;
const ACTION_REF = /^[A-Za-z0-9][\w.-]*\/[\w.-]+@[\w./-]+$/;
const IMAGE_REF =
  /^[a-z0-9][\w.-]*(?::\d+)?(?:\/[a-z0-9][\w.-]*)*(?::[\w][\w.-]{0,127}|@sha256:[0-9a-f]{64})?$/;

export const REPO: OptionSpec = {
  type: "string",
  value: "DIR",
  help: "the local git repository the run is in (required)",
};
const PARAM: OptionSpec = {
  type: "string",
  multiple: true,
  default: [],
  value: "KEY=VALUE",
  help: "a value for a cyberian workflow's param (beside those of FILE's .params.yaml)",
};

/** How a local run is carried out: `run` takes these, and so do the steering commands that resume one. */
export const RUN_OPTIONS: OptionSpecs = {
  repo: {
    type: "string",
    multiple: true,
    default: [],
    value: "DIR|NAME=PATH",
    help: "the local git repository the run is in (required); for a graph that spans repositories, also NAME=PATH: the clone of each other repository it names",
  },
  repos: {
    type: "string",
    value: "FILE",
    help: "for a graph that spans repositories: a YAML file of NAME: PATH lines, the clone of each other repository it names",
  },
  "scripted-model": {
    type: "boolean",
    help: "the agent's turns come from the built-in scripted model: free, no account (Claude Code still runs)",
  },
  claude: {
    type: "string",
    value: "PATH",
    help: "the Claude Code to run (default: $AGENTRELAY_CLAUDE, the one the clone installed, or claude on the PATH)",
  },
  "max-turns": {
    type: "string",
    value: "N",
    help: "the most turns Claude Code may take in one session (default 60)",
    check: wholeNumber,
  },
  verbose: { type: "boolean", help: "stream the agents' tool calls and the gates' output" },
  credentials: {
    type: "string",
    value: "FILE",
    help: "agentrelay's credentials file: Anthropic credentials and each token tier's variables",
  },
  "anthropic-credential": {
    type: "string",
    value: "NAME",
    help: "the credentials file's anthropic entry to use (default: the graph's, or the only one)",
  },
  param: PARAM,
};

export const NEW_RUN: OptionSpec = {
  type: "boolean",
  help: "start a new run instead of resuming the latest (once the agent check passed, the last run's branches are archived)",
};

export const RENDER_OPTIONS: OptionSpecs = {
  attempt: {
    type: "string",
    default: "1",
    value: "N",
    help: "the attempt to render, as the agent of that attempt is told (default 1)",
    check: wholeNumber,
  },
  out: {
    type: "string",
    value: "DIR",
    help: "where to write the files (default ./agentrelay-render/TASK_ID)",
  },
  param: PARAM,
};

export const SIMULATE_OPTIONS: OptionSpecs = {
  fail: {
    type: "string",
    multiple: true,
    default: [],
    value: "TASK[:N]",
    help: "the task's first N attempts fail (every attempt without N)",
    check: idCount("TASK"),
  },
  concern: {
    type: "string",
    multiple: true,
    default: [],
    value: "TASK",
    help: "the task's agent raises a design concern (its integration then waits for a person)",
  },
  conflict: {
    type: "string",
    multiple: true,
    default: [],
    value: "TASK[:N]",
    help: "the first N merges of the task's PR conflict (1 without N)",
    check: idCount("TASK"),
  },
  "conflict-integration": {
    type: "string",
    multiple: true,
    default: [],
    value: "WS[:N]",
    help: "the first N merges of the workstream's integration PR conflict (1 without N)",
    check: idCount("WORKSTREAM"),
  },
  "cost-per-attempt": {
    type: "string",
    value: "USD",
    help: "what each attempt spends (stopped at its cap), to see where a budget stops the run",
    check: (value) => ("error" in parseUsd(value) ? AMOUNT_FORM : null),
  },
  at: {
    type: "string",
    value: "EVENTS",
    help: "stop after this many events, to see the run (and its status comment) while tasks are running",
    check: (value) => (/^[1-9]\d{0,8}$/.test(value) ? null : "a number of events from 1"),
  },
  json: { type: "boolean", help: "print the outcome, events and statuses as one JSON object" },
  markdown: { type: "boolean", help: "print the run's status comment as it would stand on GitHub" },
};

export const INIT_OPTIONS: OptionSpecs = {
  "no-app": {
    type: "boolean",
    help: "workflow-only mode: the orchestrator runs as a workflow in the repository, no app to host",
  },
  repo: { type: "string", value: "DIR", help: "the repository to set up (default: the one you are in)" },
  release: {
    type: "string",
    value: "vX.Y.Z",
    help: "use agentrelay's published release (its Action and agent image) instead of this clone's commit",
    check: (value) => (RELEASE_TAG.test(value) ? null : "a release tag such as v1.2.3"),
  },
  action: {
    type: "string",
    value: "OWNER/REPO@REF",
    help: "the Action to run instead (a fork's, say), pinned to a commit or tag",
    check: (value) => (ACTION_REF.test(value) ? null : "OWNER/REPO@REF"),
  },
  image: {
    type: "string",
    value: "IMAGE",
    help: "the agent image to run in instead (default: built by the workflow, or the release's)",
    check: (value) => (IMAGE_REF.test(value) ? null : "an image reference such as ghcr.io/owner/name:tag"),
  },
  force: { type: "boolean", help: "replace workflows that were edited since init wrote them" },
  gh: {
    type: "boolean",
    help: "with --no-app: set the Anthropic secret (from ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN, on gh's standard input) and the Actions PR setting through the GitHub CLI",
  },
};

export const DOCTOR_OPTIONS: OptionSpecs = {
  repo: {
    type: "string",
    value: "OWNER/NAME",
    help: "the GitHub repository to check (default: the origin remote of the repository you are in)",
    check: (value) => (/^[A-Za-z0-9-]+\/[A-Za-z0-9_.-]+$/.test(value) ? null : "OWNER/NAME"),
  },
  "api-url": {
    type: "string",
    value: "URL",
    help: "GitHub's REST API (default: $GITHUB_API_URL, else https://api.github.com; GitHub Enterprise Server's own)",
    check: (value) =>
      /^https?:\/\/[^\s/]+/.test(value) ? null : "an http(s) URL such as https://ghe.example/api/v3",
  },
};

export const CONFORMANCE_OPTIONS: OptionSpecs = {
  ...DOCTOR_OPTIONS,
  repo: { ...DOCTOR_OPTIONS.repo!, help: "a repository you administer, to check on scratch branches" },
  actions: {
    type: "boolean",
    help: "also run the event cases: workflow files on the default branch for the run's length (removed at the end), a few runner minutes",
  },
};

/**
 * The conformance suite's shape: each GitHub behaviour agentrelay relies on is one case (a rule in
 * words, what GitHub's documentation says of it and where, whether it says it at all), and a case
 * that can be observed through the API has a `run` that observes it through a probe: the clients of
 * the tokens it was given, the repository, and a scratch branch with pull requests of its own.
 */
import type { GitHubClient } from "../client.ts";
import { messageOf, statusOf } from "../client.ts";

/** How an observation compares with what is documented (or, for an undocumented rule, assumed). */
export type Verdict = "as documented" | "more permissive" | "stricter" | "differs";

/**
 * What a case needs beyond a person's token with read and write access: a server-to-server token
 * (an installation's or a workflow's GITHUB_TOKEN, whose answers differ), administration of the
 * repository (rulesets), a merge queue (organisation repositories), Actions minutes and a commit on
 * the default branch (events: not run by the API runner).
 */
export type Need = "server-token" | "admin" | "merge-queue" | "actions" | "default-branch";

export type Area = "events" | "settings" | "limits" | "merges" | "shapes";

export interface Observation {
  observed: string;
  verdict: Verdict;
}

export interface ConformanceCase {
  id: string;
  area: Area;
  /** The rule, in one sentence. */
  rule: string;
  /** What the product expects: GitHub's documented behaviour, or the strict reading where it is silent. */
  expected: string;
  /** Whether GitHub's documentation states it ("documented") or not ("undocumented": evidence below). */
  documentation: "documented" | "undocumented";
  /** Where: GitHub's documentation, or the public evidence for an undocumented rule. */
  citation: string;
  needs: Need[];
  /** Observes the rule through the API; absent for what only Actions runs show (the events). */
  run?: (probe: Probe) => Promise<Observation>;
}

/** A pull request of the scratch branch: its head branch and commit, number and node id. */
export interface ScratchPull {
  number: number;
  nodeId: string;
  head: string;
  headSha: string;
}

/** What a case observes through: the tokens' clients, the repository, its scratch branch. */
export interface Probe {
  owner: string;
  repo: string;
  defaultBranch: string;
  /** A person's token (the one `gh auth token` gives, or GITHUB_TOKEN outside a workflow). */
  person: GitHubClient;
  /** A server-to-server token (ghs_: an installation's or a workflow's), when one was given. */
  server: GitHubClient | null;
  /** The scratch base branch, made from the default branch's head on first use. */
  base(): Promise<string>;
  /** A new pull request into the scratch base: a branch with one commit of `files` (path → text). */
  pull(name: string, files?: Record<string, string>): Promise<ScratchPull>;
  /** A commit on top of the scratch base's head (or `parent`) with `files` (null deletes one), on no branch. */
  commit(files: Record<string, string | null>, parent?: string): Promise<string>;
  /** Something to undo when the suite ends, whatever happened. */
  undo(what: string, run: () => Promise<unknown>): void;
  /** The Actions session's observations (opt-in: made once, on first use). */
  actions(): Promise<ActionsObserved>;
  /** An active ruleset on the scratch base with `rules`; the function removes it (the end does too). */
  ruleset(name: string, rules: object[]): Promise<() => Promise<void>>;
}

/** What the Actions session (actions.ts) saw. */
export interface ActionsObserved {
  /** Which of its workflows ran, by letter. */
  ran: Record<string, boolean>;
  /** Whether T was dispatched (a server-to-server token was given). */
  serverDispatched: boolean;
  /** GitHub's answer to a dispatch of A with an input A does not declare: its status and message. */
  undeclaredInput: { status: number | null; message: string };
}

/** A case that cannot be observed here (a token not given, a feature the repository lacks): why. */
export class NotObservable extends Error {
  override name = "NotObservable";
}

/** GitHub's answer to a request, success or not, as the cases compare it. */
export interface Answer {
  status: number;
  data: unknown;
  headers: Record<string, string | undefined>;
  message: string;
}

/** Makes a request and keeps GitHub's answer whatever its status (never throws an HTTP error). */
export async function ask(
  client: GitHubClient,
  route: string,
  params: Record<string, unknown> = {},
): Promise<Answer> {
  try {
    const r = await client.request(route, params);
    return {
      status: r.status,
      data: r.data,
      headers: r.headers as Answer["headers"],
      message: (r.data as { message?: string } | undefined)?.message ?? "",
    };
  } catch (error) {
    const status = statusOf(error);
    if (status === undefined) throw error;
    const response = (error as { response?: { data?: unknown; headers?: Answer["headers"] } }).response;
    return {
      status,
      data: response?.data,
      headers: response?.headers ?? {},
      message: [messageOf(error), ...validationMessages(response?.data)].join("; "),
    };
  }
}

/** The messages of a 422's validation errors, where GitHub puts the reason. */
const validationMessages = (data: unknown): string[] =>
  ((data as { errors?: ({ message?: string } | string)[] } | undefined)?.errors ?? []).map((e) =>
    typeof e === "string" ? e : (e.message ?? ""),
  );

/** An answer in a few words: its status and the start of its message. */
export const said = (a: Answer): string =>
  a.status < 300 ? String(a.status) : `${a.status} "${a.message.split("\n").join(" ").slice(0, 90)}"`;

/**
 * The verdict on a request the rule says GitHub refuses with `status` and words matching `words` (what
 * the product reads): accepted is more permissive; refused otherwise (another status, other words)
 * differs.
 */
export function refused(a: Answer, status: number, words: RegExp): Observation {
  if (a.status < 300) return { observed: `accepted (${a.status})`, verdict: "more permissive" };
  const verdict = a.status === status && words.test(a.message) ? "as documented" : "differs";
  return { observed: `refused ${said(a)}`, verdict };
}

/**
 * `write`, or NotObservable when GitHub refuses the person's token a change to workflow files (a token
 * without the `workflow` scope): the case cannot be set up here, and the rest of the suite goes on.
 */
export async function withWorkflowScope<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (statusOf(error) === 403 || statusOf(error) === 404)
      throw new NotObservable(
        "the person's token may not push workflow files: add the workflow scope (`gh auth refresh -s workflow`)",
      );
    throw error;
  }
}

/** The server-to-server client, or NotObservable when none was given. */
export function serverOf(probe: Probe): GitHubClient {
  if (!probe.server)
    throw new NotObservable(
      "needs a server-to-server token (AGENTRELAY_CONFORMANCE_SERVER_TOKEN: an installation's, or a workflow's GITHUB_TOKEN)",
    );
  return probe.server;
}

/**
 * `agentrelay conformance [--repo OWNER/NAME] [--api-url URL]`: runs the conformance suite
 * (github/conformance/) against a repository the user administers, and prints each rule agentrelay
 * relies on, what GitHub documents of it, and what was observed. It works on scratch branches
 * (agentrelay-conformance/<id>/…) with pull requests and rulesets of their own, never the default
 * branch, and removes them at the end whatever happened. The token is a person's (GITHUB_TOKEN,
 * GH_TOKEN or `gh auth token`, never printed); AGENTRELAY_CONFORMANCE_SERVER_TOKEN adds a
 * server-to-server one (an installation's, or a workflow's GITHUB_TOKEN) for the cases about such
 * tokens. `--actions` also runs the event cases that Actions shows: workflow files committed to the
 * default branch for the run's length, and a few runner minutes.
 * Exit 0 when every case observed is as documented, 1 when one is not (or it cannot run).
 */
import { statusOf } from "../../github/client.ts";
import { conformanceClient } from "../../github/conformance/client.ts";
import {
  ConformanceFailure,
  conformanceTable,
  departures,
  runConformance,
} from "../../github/conformance/runner.ts";
import { ACTIONS_TIMING, type ActionsTiming } from "../../github/conformance/actions.ts";
import { EXIT, type Io } from "../io.ts";
import { unreachable } from "./doctor.ts";
import { repositoryAndToken } from "./github-remote.ts";

export class ConformanceError extends Error {
  override name = "ConformanceError";
}

export const SERVER_TOKEN_VARIABLE = "AGENTRELAY_CONFORMANCE_SERVER_TOKEN";

/**
 * How the Actions session waits for runs: GitHub's pace, or a server's that runs at once (the
 * stand-in's, which says AGENTRELAY_GITHUB_PACING=off).
 */
const actionsTiming = (env: NodeJS.ProcessEnv): ActionsTiming =>
  env.AGENTRELAY_GITHUB_PACING === "off" ? { pollMs: 50, timeoutMs: 10_000, settleMs: 0 } : ACTIONS_TIMING;

export interface ConformanceOptions {
  repo?: string | undefined;
  apiUrl?: string | undefined;
  /** Also the event cases, with workflow files on the default branch (opt-in). */
  actions?: boolean;
  dir?: string;
}

export async function conformanceCommand(
  options: ConformanceOptions,
  io: Io,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const { repository, token } = repositoryAndToken(
    options,
    env,
    (line) => new ConformanceError(line),
    "no GitHub token: set GITHUB_TOKEN (or GH_TOKEN) to a person's token, or log in with `gh auth login`",
  );
  if (token.startsWith("ghs_"))
    throw new ConformanceError(
      `the token is a server-to-server one (ghs_): give a person's token as GITHUB_TOKEN or GH_TOKEN (or \`gh auth login\`), and this one as ${SERVER_TOKEN_VARIABLE}`,
    );
  const apiUrl = options.apiUrl ?? env.GITHUB_API_URL ?? "https://api.github.com";
  const serverToken = env[SERVER_TOKEN_VARIABLE] || null;
  // A server with no rate limits may say so, as to the orchestrator workflow (app/workflow.ts).
  const paced = env.AGENTRELAY_GITHUB_PACING !== "off";
  const id = Date.now().toString(36);
  io.err(
    `agentrelay conformance: ${repository} through ${apiUrl}, on scratch branches agentrelay-conformance/${id}/…${options.actions ? " and workflow files on the default branch" : ""} (removed at the end)${serverToken ? "" : `; no ${SERVER_TOKEN_VARIABLE}: the cases about server-to-server tokens are not run`}`,
  );
  let run: Awaited<ReturnType<typeof runConformance>>;
  try {
    run = await runConformance({
      person: conformanceClient(token, apiUrl, { budget: "conformance-person", paced }),
      server: serverToken
        ? conformanceClient(serverToken, apiUrl, { budget: "conformance-server", paced })
        : null,
      repository,
      id,
      // A run takes minutes on GitHub: each case says when it ends.
      progress: ({ case: c, observation }) =>
        io.err(
          `agentrelay conformance: ${c.id}: ${"notRun" in observation ? "not run" : observation.verdict}`,
        ),
      ...(options.actions ? { actions: actionsTiming(env) } : {}),
    });
  } catch (error) {
    const left = error instanceof ConformanceFailure ? error.leftOver : [];
    const cause = error instanceof ConformanceFailure ? error.cause : error;
    const why = unreachable(cause, apiUrl);
    const status = statusOf(cause);
    const fix =
      why !== null
        ? `GitHub could not be reached (${why}): connect, then run it again`
        : status === 401
          ? "GitHub refused the token (401): set a valid GITHUB_TOKEN, or run `gh auth login`"
          : status === 403 || status === 404
            ? `${repository}: not found, or the token may not write to it: use a token with write access (admin for the rules cases)`
            : `${(error as Error).message}`;
    throw new ConformanceError(
      `${fix}${left.length ? `; not cleaned up, remove by hand: ${left.join("; ")}` : ""}`,
    );
  }
  io.out(conformanceTable(run.rows));
  const observed = run.rows.filter((r) => !("notRun" in r.observation));
  const differ = departures(run.rows);
  io.out(
    `${observed.length} of ${run.rows.length} cases observed on ${repository}: ${observed.length - differ.length} as documented${differ.length ? `, ${differ.length} not: ${differ.map((r) => r.case.id).join(", ")}` : ""}; ${run.rows.length - observed.length} not run`,
  );
  for (const left of run.leftOver) io.err(`agentrelay conformance: not cleaned up, remove by hand: ${left}`);
  return differ.length > 0 || run.leftOver.length > 0 ? EXIT.failed : EXIT.ok;
}

/**
 * A run whose stored state is damaged (protocol/state-check.ts) cannot move, and every event about it
 * would fail the same way. Instead of answering every webhook 500 with nothing said, the app says it
 * once, where people follow the run: on its tracking issue, when the run's record still names it, else
 * on an issue of its own; each damaged version is said once however often events arrive.
 */
import { StateDamageError } from "../protocol/state-check.ts";
import type { RepoContext } from "./client.ts";

/** What the state store knows of a damaged run beyond the damage itself. */
export interface DamagedRun {
  run: string;
  /** The state branch commit that holds the damage. */
  version: string;
  trackingIssue: number | null;
}

export class RunStateDamageError extends StateDamageError {
  override name = "StateDamageError";
  constructor(
    error: StateDamageError,
    readonly damaged: DamagedRun,
    problem: string,
  ) {
    super(error.part, problem);
  }
}

/**
 * The one line for a damaged part of a run on GitHub: which part, of which run, where it lives (its
 * folder on the state branch, at which commit), and what to do. Restoring the folder from an earlier
 * commit loses nothing the run did since: before it dispatches a task it asks GitHub whether that
 * task's PR merged already, and the reconciler adopts what GitHub merged that the state does not know
 * (merge-record.ts), so no work is done twice.
 */
export function runStateDamage(
  error: StateDamageError,
  damaged: DamagedRun,
  where: { dir: string; branch: string },
): RunStateDamageError {
  const { dir, branch } = where;
  return new RunStateDamageError(
    error,
    damaged,
    `of run ${damaged.run} ${error.problem} (${dir}/${error.part} on the branch ${branch} at ${damaged.version.slice(0, 12)}): nothing was changed; restore ${dir}/ from the last commit of that branch before the damage (git log -p -- ${dir}) and push it on top; the run then takes up what GitHub merged since that commit instead of doing it again`,
  );
}

const marker = (d: DamagedRun) => `<!-- agentrelay:damaged run=${d.run} at=${d.version} -->`;

/** Says once, on GitHub, that a run's state is damaged and how to restore it. */
export async function sayStateDamage(ctx: RepoContext, error: RunStateDamageError): Promise<void> {
  const { octokit, owner, repo } = ctx;
  const d = error.damaged;
  ctx.log(`run ${d.run}: ${error.message}`);
  const body = `${marker(d)}\n**agentrelay cannot read run \`${d.run}\`**: ${error.message}`;
  let issue = d.trackingIssue;
  if (issue === null) {
    const title = `agentrelay: the state of run ${d.run} is damaged`;
    const open = await octokit.rest.issues.listForRepo({ owner, repo, state: "open", per_page: 100 });
    const known = open.data.find((i) => i.title === title);
    if (known) issue = known.number;
    else {
      await octokit.rest.issues.create({ owner, repo, title, body });
      return;
    }
  }
  const comments = await octokit.rest.issues.listComments({
    owner,
    repo,
    issue_number: issue,
    per_page: 100,
  });
  if (comments.data.some((c) => c.body?.startsWith(marker(d)))) return;
  await octokit.rest.issues.createComment({ owner, repo, issue_number: issue, body });
}

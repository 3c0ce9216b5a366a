/**
 * The conformance suite's Actions session (opt-in: `agentrelay conformance --actions`): workflow
 * files committed to the default branch for the length of the run, one dispatch by the person's
 * token and one by the server-to-server token, and which of them GitHub ran. The files run nothing
 * but `true` (a few runner minutes in all) and are deleted by a commit at the end.
 *
 * - A → B → C → D → E, each of B to E on `workflow_run` of the one before: the documented depth is
 *   B, C and D, never E.
 * - A dispatched first with an input it does not declare: GitHub's refusal, as it words it.
 * - T, dispatched with the server-to-server token (a workflow's GITHUB_TOKEN, where the suite runs in a
 *   workflow), and U on `workflow_run` of T: whether U runs is the undocumented point the product
 *   does not rely on.
 */
import { messageOf, statusOf } from "../client.ts";
import { type ActionsObserved, type Probe, withWorkflowScope } from "./model.ts";

export const CHAIN = ["a", "b", "c", "d", "e"] as const;
const file = (letter: string) => `agentrelay-conformance-${letter}.yml`;
const name = (letter: string) => `agentrelay-conformance ${letter.toUpperCase()}`;
const JOB = "jobs:\n  nothing:\n    runs-on: ubuntu-latest\n    steps:\n      - run: 'true'\n";

/** The workflow files, by path: dispatchable A and T, the rest on workflow_run of the one before. */
export function actionsWorkflows(): Record<string, string> {
  const onRunOf = (letter: string) =>
    `on:\n  workflow_run:\n    workflows: ["${name(letter)}"]\n    types: [completed]\n`;
  const files: Record<string, string> = {};
  for (const [i, letter] of [...CHAIN, "t", "u"].entries()) {
    const on =
      letter === "a" || letter === "t"
        ? "on: workflow_dispatch\n"
        : onRunOf(letter === "u" ? "t" : CHAIN[i - 1]!);
    files[`.github/workflows/${file(letter)}`] = `name: ${name(letter)}\n${on}${JOB}`;
  }
  return files;
}

export interface ActionsTiming {
  /** Between two reads of the runs. */
  pollMs: number;
  /** The longest the session waits for runs. */
  timeoutMs: number;
  /** How long after its predecessor completed a run that should not start is waited for. */
  settleMs: number;
}

export const ACTIONS_TIMING: ActionsTiming = { pollMs: 10_000, timeoutMs: 10 * 60_000, settleMs: 2 * 60_000 };

/** Runs the session: commit the files, dispatch, watch the runs; the files go when the suite ends. */
export async function observeActions(probe: Probe, timing: ActionsTiming): Promise<ActionsObserved> {
  const { person, server, owner, repo, defaultBranch } = probe;
  const ref = `heads/${defaultBranch}`;
  const head = (await person.rest.git.getRef({ owner, repo, ref })).data.object.sha;
  const files = actionsWorkflows();
  const sha = await probe.commit(files, head);
  await withWorkflowScope(() => person.rest.git.updateRef({ owner, repo, ref, sha, force: false }));
  probe.undo(`the workflow files on ${defaultBranch}`, async () => {
    const now = (await person.rest.git.getRef({ owner, repo, ref })).data.object.sha;
    const gone = await probe.commit(Object.fromEntries(Object.keys(files).map((path) => [path, null])), now);
    await person.rest.git.updateRef({ owner, repo, ref, sha: gone, force: false });
  });
  const dispatch = (client: Probe["person"], letter: string, inputs?: Record<string, string>) =>
    client.request("POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches", {
      owner,
      repo,
      workflow_id: file(letter),
      ref: defaultBranch,
      ...(inputs ? { inputs } : {}),
    });
  // A declares no input: GitHub refuses one (what a task workflow older than the app's inputs meets).
  const undeclaredInput = await dispatch(person, "a", { undeclared: "x" }).then(
    (answer) => ({ status: answer.status as number, message: "" }),
    (error: unknown) => ({ status: statusOf(error) ?? null, message: messageOf(error) }),
  );
  await dispatch(person, "a");
  if (server) await dispatch(server, "t");
  const letters = [...CHAIN, ...(server ? ["t", "u"] : [])];
  const ran: Record<string, boolean> = {};
  const doneAt: Record<string, number> = {};
  const start = Date.now();
  for (;;) {
    for (const letter of letters) {
      const { data } = await person.request(
        "GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs",
        {
          owner,
          repo,
          workflow_id: file(letter),
          head_sha: sha,
        },
      );
      const runs = (data as { workflow_runs: { status: string }[] }).workflow_runs;
      ran[letter] = runs.length > 0;
      if (runs.some((r) => r.status === "completed")) doneAt[letter] ??= Date.now();
    }
    // Settled: what should run has completed, and what should not has had its time.
    const settled = (before: string, after: string) =>
      ran[after] || (doneAt[before] !== undefined && Date.now() - doneAt[before] >= timing.settleMs);
    if (settled("d", "e") && (!server || settled("t", "u"))) break;
    if (Date.now() - start >= timing.timeoutMs) break;
    await new Promise((resolve) => setTimeout(resolve, timing.pollMs));
  }
  return { ran, serverDispatched: server !== null, undeclaredInput };
}

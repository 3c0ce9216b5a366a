/**
 * Slash commands in comments (`/agentrelay status | retry TASK | cancel [TASK] | reset TASK |
 * budget +USD [WORKSTREAM|TASK] | run FILE key=value...`), accepted only from people with write
 * access (asked of the API; bots are ignored unless allow-listed), answered with a reaction and a
 * reply (others' commands get neither: they would spend the hour's writes); and a task check run's "Re-run" button, which retries the task.
 */
import { AMOUNT_FORM, parseUsd } from "../graph/amount.ts";
import type { Context } from "probot";
import type { EngineEvent } from "../engine/types.ts";
import { ParamPairError, parseParamPairs } from "../graph/params.ts";
import type { RepoContext } from "../github/client.ts";
import { RunStateDamageError } from "../github/damage.ts";
import { RunDriver } from "../github/driver.ts";
import { taskCheckRun } from "../github/projections.ts";
import { priority, unlessDeferred } from "../github/write-pacing.ts";
import { GraphError } from "../graph/errors.ts";
import { requireWriters, type Starter } from "../github/access.ts";
import { parseRunGraph } from "../protocol/run-source.ts";
import { startGraph } from "./push.ts";
import { reconcileRun } from "./reconcile.ts";

export interface SlashCommand {
  verb: "status" | "retry" | "cancel" | "reset" | "run" | "budget";
  args: string[];
}

const VERBS = new Set(["status", "retry", "cancel", "reset", "run", "budget"]);

/** `+5`, `+$0.50`: micro-dollars to add (a plain decimal within bounds), or null. */
const amountOf = (text: string | undefined): number | null => {
  if (!text?.startsWith("+")) return null;
  const amount = parseUsd(text.slice(1));
  return "micros" in amount ? amount.micros : null;
};

/** Commands on their own lines, outside code fences and quotes (quoted text is someone else's). */
export function parseCommands(body: string): SlashCommand[] {
  const commands: SlashCommand[] = [];
  let fenced = false;
  for (const line of body.split(/\r?\n/)) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced || !line.startsWith("/agentrelay")) continue;
    const [, verb = "", ...args] = line.trim().split(/\s+/);
    if (VERBS.has(verb)) commands.push({ verb: verb as SlashCommand["verb"], args });
  }
  return commands;
}

/** Write access, as GitHub says (admin, maintain and write all report at least "write"). */
async function mayCommand(ctx: RepoContext, login: string): Promise<boolean> {
  const { data } = await ctx.octokit.rest.repos.getCollaboratorPermissionLevel({
    owner: ctx.owner,
    repo: ctx.repo,
    username: login,
  });
  return data.permission === "admin" || data.permission === "write";
}

/** The run a comment is about: from the marker in its issue or PR body. */
function runOf(body: string | null | undefined): string | null {
  const m = /<!-- agentrelay:(?:run=|status run=|task run=|integration run=)([A-Za-z0-9_.-]+\/\d+)/.exec(
    body ?? "",
  );
  return m ? m[1]! : null;
}

/**
 * The hidden mark of an answer to command `index` of comment `comment` (without `index`: to all of the
 * comment's commands). A command without one was not carried out yet (GitHub's write limit was spent,
 * say): the reconciler finds it and carries it out (waiting.ts).
 */
export const answerMarker = (comment: number, index?: number): string =>
  `<!-- agentrelay:answer comment=${comment}${index === undefined ? "" : ` command=${index}`} -->`;

/** The comments and commands a text answers (its answer markers), as `comment` and `comment/index`. */
export function answered(body: string): string[] {
  return [...body.matchAll(/<!-- agentrelay:answer comment=(\d+)(?: command=(\d+))? -->/g)].map((m) =>
    m[2] === undefined ? m[1]! : `${m[1]}/${m[2]}`,
  );
}

/** The request id a command carries, so that a comment carried out twice is applied once. */
const commandId = (comment: number, index: number): string => `comment-${comment}-${index}`;

/** A comment with commands, as a webhook delivers it or the reconciler lists it. */
export interface CommandComment {
  id: number;
  body: string;
  user: { login: string; type: string };
  issue: { number: number; body?: string | null };
}

export async function onComment(
  ctx: RepoContext,
  payload: Context<"issue_comment.created">["payload"],
): Promise<void> {
  const { comment, issue, sender } = payload;
  await carryOutComment(ctx, { id: comment.id, body: comment.body, user: sender, issue });
}

/**
 * Carries out a comment's commands, each answered with its marker. `late`: the reconciler carries out
 * what waited (`skip`: commands answered already); a command the run applied already (its answer was
 * lost) is answered as done, never applied again.
 */
export async function carryOutComment(
  ctx: RepoContext,
  comment: CommandComment,
  options: { late?: boolean; skip?: ReadonlySet<number> } = {},
): Promise<void> {
  const { issue, user: sender } = comment;
  const commands = parseCommands(comment.body);
  if (commands.length === 0) return;
  if (sender.type === "Bot" && !ctx.config.allowedBots.includes(sender.login)) return;
  const repo = { owner: ctx.owner, repo: ctx.repo };
  // A reaction only tells people the comment was handled: it yields to the run's progress.
  const react = (content: "+1" | "eyes") =>
    unlessDeferred(() =>
      ctx.octokit.rest.reactions.createForIssueComment({
        ...repo,
        comment_id: comment.id,
        content,
        ...priority("view"),
      }),
    );
  const quote = `> ${comment.body.split("\n")[0]}`;
  const reply = (body: string, index?: number) =>
    ctx.octokit.rest.issues.createComment({
      ...repo,
      issue_number: issue.number,
      body: `${answerMarker(comment.id, index)}\n${quote}\n\n${body}`,
    });
  // The reaction comes last: a comment without one, and without an answer, was not carried out whole
  // (the reconciler finds it: waiting.ts).
  // Someone without write access is not answered: a reply and a reaction are two writes of the hour's
  // budget each, which anyone could spend with comments (the writers' own commands would wait then).
  if (!(await mayCommand(ctx, sender.login))) {
    ctx.log(`comment ${comment.id}: ${sender.login} has no write access; its commands are ignored`);
    return;
  }
  const driver = new RunDriver(ctx);
  let damage: RunStateDamageError | null = null;
  for (const [index, command] of commands.entries()) {
    if (options.skip?.has(index)) continue;
    const answer = (body: string) => reply(body, index);
    try {
      await carryOutCommand(ctx, driver, comment, command, index, answer, options.late === true);
    } catch (error) {
      if (!(error instanceof RunStateDamageError)) throw error;
      // The run cannot be read: whoever asked is answered so; the caller says it where people follow
      // the run (once), and in its log.
      await answer(`**agentrelay cannot read run \`${error.damaged.run}\`**: ${error.message}`);
      damage ??= error;
    }
  }
  await react("eyes");
  if (damage) throw damage;
}

async function carryOutCommand(
  ctx: RepoContext,
  driver: RunDriver,
  comment: CommandComment,
  command: SlashCommand,
  index: number,
  answer: (body: string) => Promise<unknown>,
  late: boolean,
): Promise<void> {
  const { issue, user: sender } = comment;
  const repo = { owner: ctx.owner, repo: ctx.repo };
  if (command.verb === "run") {
    const [file, ...pairs] = command.args;
    const usage = "Usage: `/agentrelay run .workflow/FILE.yaml key=value ...`";
    if (!file) return void (await answer(usage));
    let params: Record<string, unknown>;
    try {
      params = parseParamPairs(pairs); // the same values as the CLI's --param
    } catch (error) {
      if (!(error instanceof ParamPairError)) throw error;
      return void (await answer(usage));
    }
    const { data: head } = await ctx.octokit.rest.repos.getBranch({ ...repo, branch: ctx.defaultBranch });
    const result = await startGraph(ctx, file, head.commit.sha, params, sender, "comment the command");
    await answer(
      "issues" in result
        ? `Nothing started:\n\n\`\`\`\n${result.issues}\n\`\`\``
        : `Run \`${result.runKey}\` ${result.started ? "started" : "is already running"}.`,
    );
    return;
  }
  const runKey = runOf(issue.body);
  if (!runKey) return void (await answer("Use this command on a run's tracking issue or on one of its PRs."));
  if (command.verb === "status") {
    await reconcileRun(driver, runKey);
    const loaded = await driver.load(runKey);
    await answer(
      loaded
        ? `Run \`${runKey}\`: ${loaded.run.outcome ?? "running"}; the status comment is up to date.`
        : `No run \`${runKey}\`.`,
    );
    return;
  }
  // retry, reset and budget make the run write again, in every repository its graph names: whoever
  // asks must be allowed to write in each, as whoever started it was (cancel only stops writes).
  if (command.verb !== "cancel") {
    const refused = await mayNotSteer(ctx, driver, runKey, sender, "comment the command");
    if (refused) return void (await answer(`Not done:\n\n${refused.map((r) => `- ${r}`).join("\n")}`));
  }
  // Named by the comment, so that a delivery GitHub repeats, or the reconciler carrying out a command
  // whose answer was lost, applies it once.
  const id = commandId(comment.id, index);
  let event: EngineEvent;
  if (command.verb === "budget") {
    const micros = amountOf(command.args[0]);
    if (micros === null)
      return void (await answer(
        `Usage: \`/agentrelay budget +USD [WORKSTREAM|TASK]\`, where USD is ${AMOUNT_FORM}: e.g. \`/agentrelay budget +5\``,
      ));
    const target = command.args[1];
    event = {
      type: "command",
      command: "budget",
      micros,
      ...(target ? { target } : {}),
      id,
      by: sender.login,
      at: ctx.now(),
    };
  } else {
    event = {
      type: "command",
      command: command.verb,
      ...(command.args[0] ? { task: command.args[0] } : {}),
      id,
      by: sender.login,
      at: ctx.now(),
    };
  }
  if (late) {
    const loaded = await driver.load(runKey, { fresh: true });
    const run = loaded?.run;
    if (run && (run.appliedCommands?.includes(id) || run.budget?.raises.includes(id))) {
      driver.store.release(runKey, run);
      const text = ["/agentrelay", command.verb, ...command.args].join(" ");
      await answer(`Done: \`${text}\` was applied when it came; its answer waited for GitHub's write limit.`);
      return;
    }
  }
  const run = await driver.drive(runKey, [event], {
    origin: { issueNumber: issue.number, answer: answerMarker(comment.id, index) },
  });
  if (!run) await answer(`No run \`${runKey}\`.`);
}

/**
 * Why `sender` may not make run `runKey` write again (one line per repository, with the fix, saying to
 * `instead`), or null: the repositories its graph names besides its own are checked as a push of it
 * would be (access.ts).
 */
async function mayNotSteer(
  ctx: RepoContext,
  driver: RunDriver,
  runKey: string,
  sender: Starter,
  instead: string,
): Promise<string[] | null> {
  const loaded = await driver.load(runKey);
  if (!loaded) return null; // no run: the command answers so itself
  const { source } = loaded.run;
  try {
    const graph = parseRunGraph(source);
    const own = `${ctx.owner}/${ctx.repo}`;
    await requireWriters(ctx.octokit, graph, source, own, sender, ctx.config.allowedBots, instead);
    return null;
  } catch (error) {
    if (!(error instanceof GraphError)) throw error;
    return error.issues.map((i) => i.message);
  }
}

export async function onCheckRunRerequested(
  ctx: RepoContext,
  payload: Context<"check_run.rerequested">["payload"],
): Promise<void> {
  const { check_run: check, sender } = payload;
  const m = /^([A-Za-z0-9_.-]+\/\d+)\/([A-Za-z0-9_.-]+)$/.exec(check.external_id ?? "");
  if (!m || !check.name.startsWith("agentrelay / ")) return;
  if (sender.type === "Bot" || !(await mayCommand(ctx, sender.login))) return;
  const driver = new RunDriver(ctx);
  // The Re-run button is a retry: refused, like the command, to someone who may not write where it would.
  const refused = await mayNotSteer(ctx, driver, m[1]!, sender, "press Re-run");
  if (refused) {
    const line = `Re-run by ${sender.login} not done: ${refused.join("; ")}`;
    ctx.log(`${check.name}: ${line}`);
    // Said where they pressed it: an app may update its own check run ("Update a check run",
    // https://docs.github.com/en/rest/checks/runs#update-a-check-run), and the next verdict rewrites it.
    const loaded = await driver.load(m[1]!);
    const task = loaded?.run.tasks[m[2]!];
    const n = task?.attempts.findLastIndex((a) => a.outcome) ?? -1;
    if (loaded && n >= 0) {
      loaded.run.github.checkRuns[m[2]!] ??= check.id;
      await taskCheckRun(ctx, loaded.run, m[2]!, n + 1, loaded.engine.plan, line);
    }
    return;
  }
  await driver.drive(m[1]!, [
    { type: "command", command: "retry", task: m[2]!, by: sender.login, at: ctx.now() },
  ]);
}

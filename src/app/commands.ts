/**
 * Slash commands in comments (`/agentrelay status | retry TASK | cancel [TASK] | reset TASK |
 * budget +USD [WORKSTREAM|TASK] | run FILE key=value...`), accepted only from people with write
 * access (asked of the API; bots are ignored unless allow-listed), answered with a reaction and a
 * reply; and a task check run's "Re-run" button, which retries the task.
 */
import { AMOUNT_FORM, parseUsd } from "../graph/amount.ts";
import type { Context } from "probot";
import type { EngineEvent } from "../engine/types.ts";
import { ParamPairError, parseParamPairs } from "../graph/params.ts";
import type { RepoContext } from "../github/client.ts";
import { RunDriver } from "../github/driver.ts";
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

export async function onComment(
  ctx: RepoContext,
  payload: Context<"issue_comment.created">["payload"],
): Promise<void> {
  const { comment, issue, sender } = payload;
  const commands = parseCommands(comment.body);
  if (commands.length === 0) return;
  if (sender.type === "Bot" && !ctx.config.allowedBots.includes(sender.login)) return;
  const repo = { owner: ctx.owner, repo: ctx.repo };
  const react = (content: "+1" | "-1" | "eyes") =>
    ctx.octokit.rest.reactions.createForIssueComment({ ...repo, comment_id: comment.id, content });
  const reply = (body: string) =>
    ctx.octokit.rest.issues.createComment({
      ...repo,
      issue_number: issue.number,
      body: `> ${comment.body.split("\n")[0]}\n\n${body}`,
    });
  if (!(await mayCommand(ctx, sender.login))) {
    await react("-1");
    await reply(`@${sender.login} agentrelay commands need write access to this repository.`);
    return;
  }
  await react("eyes");
  const driver = new RunDriver(ctx);
  for (const command of commands) {
    if (command.verb === "run") {
      const [file, ...pairs] = command.args;
      const usage = "Usage: `/agentrelay run .workflow/FILE.yaml key=value ...`";
      if (!file) {
        await reply(usage);
        continue;
      }
      let params: Record<string, unknown>;
      try {
        params = parseParamPairs(pairs); // the same values as the CLI's --param
      } catch (error) {
        if (!(error instanceof ParamPairError)) throw error;
        await reply(usage);
        continue;
      }
      const { data: head } = await ctx.octokit.rest.repos.getBranch({ ...repo, branch: ctx.defaultBranch });
      const result = await startGraph(ctx, file, head.commit.sha, params);
      await reply(
        "issues" in result
          ? `Nothing started:\n\n\`\`\`\n${result.issues}\n\`\`\``
          : `Run \`${result.runKey}\` ${result.started ? "started" : "is already running"}.`,
      );
      continue;
    }
    const runKey = runOf(issue.body);
    if (!runKey) {
      await reply("Use this command on a run's tracking issue or on one of its PRs.");
      continue;
    }
    if (command.verb === "status") {
      await reconcileRun(driver, runKey);
      const loaded = await driver.load(runKey);
      await reply(
        loaded
          ? `Run \`${runKey}\`: ${loaded.run.outcome ?? "running"}; the status comment is up to date.`
          : `No run \`${runKey}\`.`,
      );
      continue;
    }
    let event: EngineEvent;
    if (command.verb === "budget") {
      const micros = amountOf(command.args[0]);
      if (micros === null) {
        await reply(
          `Usage: \`/agentrelay budget +USD [WORKSTREAM|TASK]\`, where USD is ${AMOUNT_FORM}: e.g. \`/agentrelay budget +5\``,
        );
        continue;
      }
      const target = command.args[1];
      // Named by the comment, so that a delivery GitHub repeats raises the budget once.
      const id = `comment-${comment.id}-${commands.indexOf(command)}`;
      event = {
        type: "command",
        command: "budget",
        micros,
        ...(target ? { target } : {}),
        id,
        by: sender.login,
        at: Date.now(),
      };
    } else {
      event = {
        type: "command",
        command: command.verb,
        ...(command.args[0] ? { task: command.args[0] } : {}),
        by: sender.login,
        at: Date.now(),
      };
    }
    await driver.drive(runKey, [event], { origin: { issueNumber: issue.number } });
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
  await new RunDriver(ctx).drive(m[1]!, [
    { type: "command", command: "retry", task: m[2]!, by: sender.login, at: Date.now() },
  ]);
}

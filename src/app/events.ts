/**
 * Which handler each GitHub event goes to, whoever delivers it: the app's webhooks (index.ts) and
 * the orchestrator workflow (workflow.ts) hand every event to the same handlers, with the repository
 * the event is about and a client for it.
 */
import type { Context } from "probot";
import type { RepoContext } from "../github/client.ts";
import { onCheckRunRerequested, onComment } from "./commands.ts";
import { onCheckSuite, onPullRequestClosed, onWorkflowRun } from "./outcomes.ts";
import { planPullRequest } from "./plan.ts";
import { runOnPush } from "./push.ts";

/** The login GitHub shows for what this orchestrator does (its merges are not a person's). */
export type OwnLogin = () => Promise<string>;

type Handler<E extends keyof typeof EVENT_HANDLERS> = (
  ctx: RepoContext,
  payload: Context<E>["payload"],
  ownLogin: OwnLogin,
) => Promise<void>;

const plan = (ctx: RepoContext, payload: Context<"pull_request">["payload"]) => planPullRequest(ctx, payload);

export const EVENT_HANDLERS = {
  push: runOnPush,
  "pull_request.opened": plan,
  "pull_request.synchronize": plan,
  "pull_request.reopened": plan,
  "pull_request.closed": onPullRequestClosed,
  "workflow_run.completed": onWorkflowRun,
  "check_suite.completed": onCheckSuite,
  "issue_comment.created": onComment,
  "check_run.rerequested": onCheckRunRerequested,
} as const;

export type HandledEvent = keyof typeof EVENT_HANDLERS;

/** The event's handler (by `name.action`, or by name for events without actions), or null. */
export function handlerOf(name: string, payload: unknown): Handler<HandledEvent> | null {
  const action = (payload as { action?: unknown }).action;
  const key = (
    typeof action === "string" && `${name}.${action}` in EVENT_HANDLERS ? `${name}.${action}` : name
  ) as HandledEvent;
  return (EVENT_HANDLERS[key] as Handler<HandledEvent> | undefined) ?? null;
}

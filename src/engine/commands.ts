/**
 * User commands as events: `retry TASK`, `cancel [TASK]`, `reset TASK`, `budget +USD [TARGET]`. Each
 * answers with a `reply` effect; a command that does not apply changes nothing and says why (a command
 * asked again by the same request, its `id`, answers nothing: it was applied).
 */
import { cancelResolutions } from "./conflicts.ts";
import { isTaskActive, isTaskTerminal } from "../plan/readiness.ts";
import { noteCleared, raiseBudget, spentBy } from "./budget.ts";
import type { Step } from "./step.ts";
import type { EngineEvent } from "./types.ts";

type Command = Extract<EngineEvent, { type: "command" }>;

/** How many applied command ids a run keeps (a request is carried out again within hours, not weeks). */
const APPLIED_KEPT = 200;

export function applyCommand(step: Step, event: Command): void {
  const { state, plan } = step;
  const target = event.command === "budget" ? event.target : event.task;
  // A command named by its request and applied already (its answer may have been lost) is not
  // applied again, nor answered here: the host that carries it out again says it was done.
  const request = event.command === "budget" ? undefined : event.id;
  if (request !== undefined && state.appliedCommands?.includes(request)) return;
  const reply = (ok: boolean, message: string) => {
    if (ok && request !== undefined) {
      const applied = (state.appliedCommands ??= []);
      applied.push(request);
      if (applied.length > APPLIED_KEPT) applied.splice(0, applied.length - APPLIED_KEPT);
      step.changed = true;
    }
    step.emit({
      type: "reply",
      key: step.key("command", event.at, event.command, target ?? "run"),
      ok,
      message,
    });
  };
  const who = event.by ? ` by @${event.by}` : "";

  if (event.command === "budget") {
    const answer = raiseBudget(step, event);
    if (answer) reply(...answer);
    return;
  }

  if (event.command === "cancel" && event.task === undefined) {
    if (state.cancelled || state.outcome !== null) return reply(false, "the run has already finished");
    state.cancelled = true;
    step.changed = true;
    cancelResolutions(step);
    for (const id of plan.order) {
      const t = step.task(id);
      if (isTaskTerminal(t.status)) continue;
      step.cancelAttempt(id);
      step.release(id);
      step.removeCandidate(id);
      t.status = "cancelled";
      t.reason = `run cancelled${who}`;
      step.log({ type: "task_cancelled", task: id, detail: t.reason });
    }
    return reply(true, "cancelled the run");
  }

  const id = event.task;
  if (id === undefined || !plan.tasks.has(id)) return reply(false, `unknown task '${id ?? ""}'`);
  const t = step.task(id);

  switch (event.command) {
    case "retry": {
      if (t.status === "blocked")
        return reply(false, `task '${id}' is blocked (${t.reason}); retry what blocks it`);
      if (t.status !== "failed" && t.status !== "cancelled") {
        return reply(false, `task '${id}' is ${t.status}; only failed or cancelled tasks can be retried`);
      }
      // A cancelled run goes on with the task retried; the other cancelled tasks stay so until retried.
      const resumed = state.cancelled;
      state.cancelled = false;
      t.status = "pending";
      t.attemptBase = t.attempt;
      t.reason = null;
      if (t.waitingOn === 0) step.addCandidate(id);
      step.unblock();
      return reply(
        true,
        `retrying '${id}' (attempt ${t.attempt + 1})${resumed ? "; the cancelled run goes on" : ""}`,
      );
    }
    case "cancel": {
      if (isTaskTerminal(t.status)) return reply(false, `task '${id}' is already ${t.status}`);
      step.cancelAttempt(id);
      cancelResolutions(step, id);
      step.failTask(id, `cancelled${who}`, "cancelled", false);
      return reply(true, `cancelled '${id}'`);
    }
    case "reset": {
      const wsId = plan.tasks.get(id)!.workstreamId;
      const ws = step.workstream(wsId);
      const started = plan.tasksByWorkstream.get(wsId)!.filter((x) => {
        const s = step.task(x).status;
        return s !== "pending" && s !== "blocked";
      });
      const tip = started[started.length - 1];
      if (tip === undefined) return reply(false, `nothing to reset in workstream '${wsId}'`);
      if (tip !== id)
        return reply(false, `'${id}' is not the tip of workstream '${wsId}'; reset '${tip}' first`);
      if (ws.integration === "merged" || ws.integration === "skipped") {
        return reply(false, `workstream '${wsId}' is already integrated into its target`);
      }
      step.cancelAttempt(id);
      cancelResolutions(step, id); // its job would push to the branch the reset deletes
      const wasDone = t.status === "merged" || t.status === "completed";
      step.emit({ type: "reset_task", key: step.key(id, "reset", t.attempt), task: id, pr: t.pr });
      if (isTaskActive(t.status)) step.release(id);
      Object.assign(t, {
        status: "pending",
        attemptBase: t.attempt,
        pr: null,
        noPr: false,
        reason: null,
        mergedAt: null,
      });
      Object.assign(t, { concerns: [], opsConcerns: [], summary: null, outputs: [] });
      noteCleared(state, spentBy(t.conflict?.resolutions ?? []));
      delete t.conflict; // its PR is closed: a new one starts with no conflict
      if (wasDone) {
        ws.unfinished++;
        for (const dependent of plan.dependents.get(id)!) {
          step.task(dependent).waitingOn++;
          step.removeCandidate(dependent);
        }
      }
      if (t.waitingOn === 0) step.addCandidate(id);
      if (ws.status === "merge_ready" || ws.status === "pr_open") ws.status = "active";
      // The branch will change: what was verified (or left to a person) no longer holds.
      if (ws.verification) Object.assign(ws.verification, { passed: null, failure: null, toPerson: false });
      step.unblock();
      return reply(true, `reset '${id}'; it will run again`);
    }
  }
}

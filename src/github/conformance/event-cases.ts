/**
 * The conformance cases of which events start which workflows, for whom. They need Actions minutes and
 * workflow files on the default branch, so the API runner lists them without running them; each says
 * what the fake's event rules (harness/fake-events.ts) must answer, which the tests check, so that
 * the fake is never more permissive than the case.
 */
import { CHAIN } from "./actions.ts";
import { type ConformanceCase, NotObservable, type Probe } from "./model.ts";

/** The chain's runs in words: "B, C and D ran; E did not". */
const said = (ran: Record<string, boolean>, letters: readonly string[]) => {
  const [yes, no] = [letters.filter((l) => ran[l]), letters.filter((l) => !ran[l])];
  const up = (ls: string[]) => ls.map((l) => l.toUpperCase()).join(", ");
  return [yes.length ? `${up(yes)} ran` : "", no.length ? `${up(no)} did not` : ""]
    .filter(Boolean)
    .join("; ");
};

/** The session's observations with T dispatched by a server-to-server token, or NotObservable. */
async function withServer(probe: Probe) {
  const observed = await probe.actions();
  if (!observed.serverDispatched)
    throw new NotObservable("needs a server-to-server token (AGENTRELAY_CONFORMANCE_SERVER_TOKEN)");
  return observed;
}

const EVENTS =
  "https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows";
const TOKEN = "https://docs.github.com/en/actions/concepts/security/github_token";
const TRIGGER =
  "https://docs.github.com/en/actions/how-tos/write-workflows/choose-when-workflows-run/trigger-a-workflow#triggering-a-workflow-from-a-workflow";

/** Who makes an event, as the fake names them. */
export type EventActor = "person" | "app" | "github_token";

/** What the fake's startsWorkflows must answer for an event made by an actor. */
export interface StartsProbe {
  event: string;
  actor: EventActor;
  action?: string;
  checkSuiteApp?: string;
  expect: "yes" | "no" | "held";
}

/** What the fake's workflowRunStarts must answer for a completed run `depth` levels into its chain. */
export interface ChainProbe {
  depth: number;
  actor: EventActor;
  expect: boolean;
}

export interface EventCase extends ConformanceCase {
  starts?: StartsProbe[];
  chain?: ChainProbe[];
}

const ACTIONS = ["actions", "default-branch"] as const;

/** GitHub's answer to a dispatch of the session's workflow A with the input `undeclared` (A declares none). */
export const UNDECLARED_INPUT_REFUSAL = '422 Unexpected inputs provided: ["undeclared"]';

export const EVENT_CASES: EventCase[] = [
  {
    id: "events.github-token-starts-nothing",
    area: "events",
    rule: "Events made with a workflow's GITHUB_TOKEN start no workflow run (a push, a merge, a comment, a check)",
    expected: "no run",
    documentation: "documented",
    citation: `${TOKEN} ("When GITHUB_TOKEN triggers workflow runs")`,
    needs: [...ACTIONS],
    starts: [
      { event: "push", actor: "github_token", expect: "no" },
      { event: "pull_request", actor: "github_token", action: "closed", expect: "no" },
      { event: "issue_comment", actor: "github_token", expect: "no" },
      { event: "push", actor: "app", expect: "yes" },
      { event: "push", actor: "person", expect: "yes" },
    ],
  },
  {
    id: "events.dispatch-exception",
    area: "events",
    rule: "A workflow_dispatch or repository_dispatch made with GITHUB_TOKEN does start a run (the task job's hand-over to the orchestrator rests on it)",
    expected: "a run",
    documentation: "documented",
    citation: `${TOKEN}; ${TRIGGER}`,
    needs: [...ACTIONS, "server-token"],
    async run(probe) {
      const { ran } = await withServer(probe);
      return ran.t
        ? { observed: "T, dispatched with the server-to-server token, ran", verdict: "as documented" }
        : { observed: "T, dispatched with the server-to-server token, did not run", verdict: "stricter" };
    },
    starts: [
      { event: "workflow_dispatch", actor: "github_token", expect: "yes" },
      { event: "repository_dispatch", actor: "github_token", expect: "yes" },
    ],
  },
  {
    id: "events.approval-required",
    area: "events",
    rule: "A PR opened, reopened or pushed to with GITHUB_TOKEN gets its pull_request runs created waiting for a person's approval; its other activity types create none",
    expected: "held runs (opened, synchronize, reopened); none otherwise",
    documentation: "documented",
    citation: `${TRIGGER}; github/docs#44419`,
    needs: [...ACTIONS],
    starts: [
      { event: "pull_request", actor: "github_token", action: "opened", expect: "held" },
      { event: "pull_request", actor: "github_token", action: "synchronize", expect: "held" },
      { event: "pull_request", actor: "github_token", action: "reopened", expect: "held" },
      { event: "pull_request", actor: "github_token", action: "labeled", expect: "no" },
      { event: "pull_request", actor: "app", action: "opened", expect: "yes" },
    ],
  },
  {
    id: "events.workflow-run-depth",
    area: "events",
    rule: "workflow_run chains at most three levels after the first workflow: of A → B → C → D → E → F, E and F do not run",
    expected: "B, C and D run; E does not",
    documentation: "documented",
    citation: `${EVENTS}#workflow_run`,
    needs: [...ACTIONS],
    async run(probe) {
      const { ran } = await probe.actions();
      const observed = said(ran, CHAIN.slice(1));
      if (ran.e) return { observed, verdict: "more permissive" };
      return { observed, verdict: ran.b && ran.c && ran.d ? "as documented" : "stricter" };
    },
    chain: [
      { depth: 0, actor: "person", expect: true },
      { depth: 1, actor: "person", expect: true },
      { depth: 2, actor: "person", expect: true },
      { depth: 3, actor: "person", expect: false },
    ],
  },
  {
    id: "events.workflow-run-of-github-token-dispatch",
    area: "events",
    rule: "Whether a run that GITHUB_TOKEN dispatched starts workflow_run when it completes: GitHub does not say; the product does not rely on it (the task job hands over by dispatch)",
    expected: "the strict reading: no workflow_run",
    documentation: "undocumented",
    citation: `${TOKEN} (silent on workflow_run of dispatched runs); shared/reference/github-audit-2.md, rule 2`,
    needs: [...ACTIONS, "server-token"],
    async run(probe) {
      const { ran } = await withServer(probe);
      if (!ran.t) throw new NotObservable("T did not run");
      return ran.u
        ? { observed: "U ran on workflow_run of T", verdict: "more permissive" }
        : { observed: "U did not run", verdict: "as documented" };
    },
    chain: [{ depth: 0, actor: "github_token", expect: false }],
  },
  {
    id: "events.dispatch-restarts-chain",
    area: "events",
    rule: "Whether a workflow_dispatch made by a workflow_run-started job begins a new workflow_run chain: GitHub does not say; the product does not rely on it",
    expected: "the strict reading: the dispatched run starts no workflow_run",
    documentation: "undocumented",
    citation: `${EVENTS}#workflow_run (counts workflow_run levels only)`,
    needs: [...ACTIONS],
    chain: [{ depth: 0, actor: "github_token", expect: false }],
  },
  {
    id: "events.workflow-run-default-branch",
    area: "events",
    rule: "workflow_run starts only a workflow whose file is on the default branch",
    expected: "no run from a workflow file on another branch",
    documentation: "documented",
    citation: `${EVENTS}#workflow_run`,
    needs: [...ACTIONS],
  },
  {
    id: "events.check-run-rerequested",
    area: "events",
    rule: "check_run rerequested and requested_action go only to the app that owns the check run, never to a workflow",
    expected: "no run",
    documentation: "documented",
    citation: "https://docs.github.com/en/webhooks/webhook-events-and-payloads#check_run",
    needs: [...ACTIONS],
    starts: [
      { event: "check_run", actor: "person", action: "rerequested", expect: "no" },
      { event: "check_run", actor: "person", action: "requested_action", expect: "no" },
    ],
  },
  {
    id: "events.check-suite-of-actions",
    area: "events",
    rule: "check_suite and check_run start no workflow for a check suite GitHub Actions created (a workflow never learns from them that Actions CI finished)",
    expected: "no run",
    documentation: "documented",
    citation: `${EVENTS}#check_suite`,
    needs: [...ACTIONS],
    starts: [
      { event: "check_suite", actor: "person", checkSuiteApp: "github-actions", expect: "no" },
      { event: "check_run", actor: "person", checkSuiteApp: "github-actions", expect: "no" },
    ],
  },
  {
    id: "events.merge-queue-events",
    area: "events",
    rule: "A merge queue sends merge_group (checks_requested) and a push for each group branch; whether its merge into the base delivers pull_request closed, and whose token it counts as, is not documented",
    expected:
      "merge_group and push documented; the merge's own events: the strict reading (no workflow from them)",
    documentation: "undocumented",
    citation:
      "https://github.blog/changelog/2022-08-18-merge-group-webhook-event-and-github-actions-workflow-trigger/; https://docs.github.com/en/repositories/configuring-branches-and-merges-in-your-repository/configuring-pull-request-merges/managing-a-merge-queue",
    needs: [...ACTIONS, "merge-queue"],
  },
  {
    id: "events.dispatch-undeclared-input",
    area: "events",
    rule: "A workflow_dispatch with an input the workflow file does not declare is refused and starts nothing (the app's wait for a task workflow older than its inputs rests on it)",
    expected: UNDECLARED_INPUT_REFUSAL,
    documentation: "undocumented",
    citation:
      "https://docs.github.com/en/rest/actions/workflows#create-a-workflow-dispatch-event (the inputs are the workflow's); the answer as callers quote it: convictional/trigger-workflow-and-wait#4, benc-uk/workflow-dispatch#80, backstage/backstage#20023",
    needs: [...ACTIONS],
    async run(probe) {
      const { status, message } = (await probe.actions()).undeclaredInput;
      const observed = `${status} ${message}`;
      if (status !== null && status < 300) return { observed, verdict: "more permissive" };
      return { observed, verdict: observed === UNDECLARED_INPUT_REFUSAL ? "as documented" : "differs" };
    },
  },
  {
    id: "events.schedule-inactive",
    area: "events",
    rule: "In a public repository, scheduled workflows are disabled after 60 days without activity (the orchestrator enables its schedule when a run starts)",
    expected: "disabled_inactivity after 60 days",
    documentation: "documented",
    citation: "https://docs.github.com/en/actions/how-tos/manage-workflow-runs/disable-and-enable-workflows",
    needs: [...ACTIONS],
  },
];

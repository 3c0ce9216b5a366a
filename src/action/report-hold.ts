/**
 * Reporting to the app, holding the report while the app says so: when the task's PR can merge only
 * once the required checks GitHub is running now pass, the app answers `held` and writes nothing
 * (protocol/report.ts, REPORT_HOLD_HEADER), and the runner reports again a little later. The report,
 * the merge and the next dispatch then land in one state write, instead of one write for the report
 * and another for the merge: waiting for required CI costs no write of its own, only the runner's
 * minutes while it holds.
 */
import { REPORT_HOLD_HEADER, REPORT_HOLD_MS, REPORT_HOLD_POLL_MS } from "../protocol/report.ts";

/**
 * The task job's timeout (templates/workflows/agentrelay-task.yml, `timeout-minutes: 120`): a runner
 * holds only while it is well inside it, so that a held report never costs the attempt.
 */
const JOB_TIMEOUT_MS = 120 * 60_000;
const HOLD_MARGIN_MS = 15 * 60_000;

export interface HoldClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const realClock: HoldClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((done) => setTimeout(done, ms)),
};

/**
 * Posts the report (`post`, given the extra headers) until the app takes it: held at most
 * REPORT_HOLD_MS from now and never past the job's timeout less a margin (`jobStarted`), then posted
 * without the hold header, which the app always writes. The app's last answer.
 */
export async function reportHolding(
  post: (headers: Record<string, string>) => Promise<Record<string, unknown>>,
  jobStarted: number,
  say: (line: string) => void,
  clock: HoldClock = realClock,
): Promise<Record<string, unknown>> {
  const until = Math.min(clock.now() + REPORT_HOLD_MS, jobStarted + JOB_TIMEOUT_MS - HOLD_MARGIN_MS);
  for (let said = false; ;) {
    const hold = clock.now() < until;
    const answer = await post(hold ? { [REPORT_HOLD_HEADER]: "1" } : {});
    if (answer.held !== true || !hold) return answer;
    if (!said)
      say("the task's PR waits for required checks that are running: the report is held until they end");
    said = true;
    const asked = Number(answer.retry_after_ms);
    const wait = Number.isFinite(asked) && asked > 0 ? Math.min(asked, 60_000) : REPORT_HOLD_POLL_MS;
    await clock.sleep(Math.max(0, Math.min(wait, until - clock.now())));
  }
}

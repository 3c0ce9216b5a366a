/**
 * An attempt's report in workflow-only mode, where no app answers the job: the orchestrator reads it
 * from the job's own workflow run, the one GitHub created for the attempt's dispatch (its id is
 * recorded at dispatch), and only there. The task workflow's step "Hand the report to the
 * orchestrator" uploads the file the Action wrote once the agent had ended, as the artifact
 * `agentrelay-report`; artifact names are unique within a run, so an artifact of that name planted
 * earlier in the job makes that step fail, and a report is taken only when the step succeeded, from
 * the one artifact, naming the attempt it was dispatched for. Where the orchestrator holds the report
 * secret (protocol/report-key.ts), the report must also carry its HMAC, so that bytes the runner did
 * not write (rewritten by a process left behind, or uploaded by another) are refused.
 */
import { unzipSync } from "fflate";
import {
  type AttemptReport,
  type AttemptRequest,
  attemptReportSchema,
  REPORT_FILE,
} from "../protocol/report.ts";
import { REPORT_MAC_FILE, reportMacMatches } from "../protocol/report-key.ts";
import { type RepoContext, statusOf } from "./client.ts";

export const REPORT_ARTIFACT = "agentrelay-report";
/** The task workflow's step that uploads the report (templates/workflows/no-app/agentrelay-attempt.yml). */
export const REPORT_STEP = "Hand the report to the orchestrator";
/** A report is small (its fields are bounded by the schema): anything larger is refused unread. */
const MAX_REPORT_BYTES = 1024 * 1024;

/** The attempt's report from its run `runId`, or why there is none that may be believed. */
export async function reportOfRun(
  ctx: RepoContext,
  runId: string,
  attempt: AttemptRequest,
): Promise<{ report: AttemptReport } | { reason: string }> {
  const repo = { owner: ctx.owner, repo: ctx.repo };
  const run_id = Number(runId);
  const { data: jobs } = await ctx.octokit.rest.actions.listJobsForWorkflowRun({
    ...repo,
    run_id,
    filter: "latest",
    per_page: 100,
  });
  const step = jobs.jobs.flatMap((job) => job.steps ?? []).find((s) => s.name === REPORT_STEP);
  if (step?.conclusion !== "success") return { reason: "the job ended without handing over its report" };
  const { data: listed } = await ctx.octokit.rest.actions.listWorkflowRunArtifacts({
    ...repo,
    run_id,
    name: REPORT_ARTIFACT,
  });
  const artifacts = listed.artifacts.filter((a) => a.name === REPORT_ARTIFACT);
  if (artifacts.length !== 1 || artifacts[0]!.expired)
    return { reason: `the job's run holds ${artifacts.length} report artifacts, not one` };
  if (artifacts[0]!.size_in_bytes > MAX_REPORT_BYTES) return { reason: "the job's report is too large" };
  let zip: ArrayBuffer;
  try {
    ({ data: zip } = (await ctx.octokit.rest.actions.downloadArtifact({
      ...repo,
      artifact_id: artifacts[0]!.id,
      archive_format: "zip",
    })) as unknown as { data: ArrayBuffer });
  } catch (error) {
    if (statusOf(error) === 410) return { reason: "the job's report expired" };
    throw error;
  }
  let text: string;
  let mac: string | null;
  try {
    const files = unzipSync(new Uint8Array(zip), {
      filter: (file) =>
        (file.name === REPORT_FILE || file.name === REPORT_MAC_FILE) && file.originalSize <= MAX_REPORT_BYTES,
    });
    const file = files[REPORT_FILE];
    if (!file) return { reason: `the job's report artifact holds no ${REPORT_FILE}` };
    text = new TextDecoder().decode(file);
    mac = files[REPORT_MAC_FILE] ? new TextDecoder().decode(files[REPORT_MAC_FILE]) : null;
  } catch {
    return { reason: "the job's report artifact is not a zip archive" };
  }
  const secret = ctx.config.workflow?.reportSecret;
  if (secret) {
    if (mac === null)
      return {
        reason: `the job's report carries no ${REPORT_MAC_FILE}: give the task workflow's step the AGENTRELAY_REPORT_SECRET the orchestrator's has`,
      };
    if (!reportMacMatches(secret, attempt, runId, text, mac))
      return {
        reason:
          "the job's report does not match its key: it was changed after the runner wrote it, so it is not believed",
      };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { reason: "the job's report is not JSON" };
  }
  const report = attemptReportSchema.safeParse(parsed);
  if (!report.success) {
    const issue = report.error.issues[0]!;
    return { reason: `the job's report is invalid: ${issue.path.join(".")}: ${issue.message}` };
  }
  const { run, task, attempt: n } = report.data;
  if (run !== attempt.run || task !== attempt.task || n !== attempt.attempt)
    return {
      reason: `the job's report is about attempt ${n} of ${task} in ${run}, not the attempt it was dispatched for`,
    };
  return { report: report.data };
}

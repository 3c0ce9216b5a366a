/**
 * The workflows `agentrelay init` writes, from the templates under templates/workflows/ (which name
 * the project's release: `agentrelay/agentrelay@v0` and its image on GHCR) and where the user's
 * workflows take the Action and the agent image from:
 *
 * - a commit of agentrelay's repository, the one the user's clone is at (nothing published needed):
 *   the Action pinned to that commit, and the image built by the workflow itself, in a job before the
 *   task's, from the Dockerfile at that commit, and kept in the repository's own packages (GHCR), so
 *   that only the first job builds it;
 * - or a release (`init --release`): the Action at the release's commit and its published image.
 *
 * A workflow GitHub runs cannot build its own job container: `jobs.<id>.container.image` is pulled
 * before any step runs, so the image is built by an earlier job and named by its output (`needs`
 * may be used in `container`, and `container.credentials` pulls it with the job's token).
 * https://docs.github.com/actions/writing-workflows/choosing-where-your-workflow-runs/running-jobs-in-a-container
 * Docker builds from a Git URL at a full commit hash (`URL#<40 hex>:<dir>`):
 * https://docs.docker.com/build/concepts/context/#git-repositories
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { templatesDir } from "../../protocol/templates.ts";

export interface WorkflowSource {
  /** `OWNER/REPO@REF` of the task Action; the orchestrator is `OWNER/REPO/orchestrate@REF`. */
  action: string;
  /** What REF is, written beside it as a comment (`v1.2.0`), when REF is a commit hash. */
  label: string | null;
  /** A published agent image, or where the workflow builds it from (a Git URL) and its tag. */
  image: { published: string } | { build: string; tag: string };
}

/** How the image job names the image it finds or builds: the repository's own package. */
const BUILT_IMAGE = "ghcr.io/${GITHUB_REPOSITORY,,}/agentrelay-agent:$TAG";

function imageJob(build: string, tag: string): string[] {
  return [
    "  # The agent image the task runs in: built from the Dockerfile of the agentrelay commit the Action",
    "  # is pinned to, and kept in this repository's packages (ghcr.io), where every later run finds it",
    "  # (the first run builds it, a few minutes). `agentrelay init --release` uses a published image instead.",
    "  image:",
    "    runs-on: ubuntu-latest",
    "    timeout-minutes: 30",
    "    permissions:",
    "      packages: write",
    "    outputs:",
    "      image: ${{ steps.image.outputs.image }}",
    "    steps:",
    "      - name: Find or build the agent image",
    "        id: image",
    "        env:",
    `          SOURCE: ${build}`,
    `          TAG: ${tag}`,
    "          TOKEN: ${{ github.token }}",
    "        run: |",
    `          image="${BUILT_IMAGE}"`,
    '          echo "$TOKEN" | docker login ghcr.io --username "$GITHUB_ACTOR" --password-stdin',
    '          if ! docker manifest inspect "$image" > /dev/null 2>&1; then',
    '            docker build --tag "$image" \\',
    '              --label "org.opencontainers.image.source=$GITHUB_SERVER_URL/$GITHUB_REPOSITORY" "$SOURCE"',
    '            docker push "$image"',
    "          fi",
    '          echo "image=$image" >> "$GITHUB_OUTPUT"',
    "",
  ];
}

/**
 * Each job that runs in the agent image runs in the one the image job found or built: it waits for
 * that job and pulls the image with its own token, which may read the repository's packages (a job
 * without permissions of its own takes the workflow's, which then include that).
 */
function runInBuiltImage(lines: string[]): string[] {
  const out: string[] = [];
  let permissions = -1; // where the current job's `permissions:` mapping starts in `out`
  let inherits = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^ {2}[\w-]+:\s*$/.test(line)) permissions = -1;
    if (/^ {4}permissions:\s*$/.test(line)) permissions = out.length;
    const image = /^( +)image: ghcr\.io\/agentrelay\/agentrelay-agent:\S+$/.exec(lines[i + 1] ?? "");
    if (!/^ +container:\s*$/.test(line) || !image) {
      out.push(line);
      continue;
    }
    const indent = image[1]!.slice(2);
    if (permissions >= 0) out.splice(permissions + 1, 0, `${indent}  packages: read # pull the agent image`);
    else inherits = true;
    out.push(
      `${indent}needs: image`,
      line,
      `${indent}  image: \${{ needs.image.outputs.image }}`,
      `${indent}  credentials:`,
      `${indent}    username: \${{ github.actor }}`,
      `${indent}    password: \${{ github.token }}`,
    );
    i++;
  }
  const workflowPermissions = out.findIndex((line) => /^permissions:\s*$/.test(line));
  if (inherits && workflowPermissions >= 0)
    out.splice(workflowPermissions + 1, 0, "  packages: read # pull the agent image the image job built");
  return out;
}

/** The template `name` (under templates/workflows/) as it runs the Action and image of `source`. */
export function workflowText(name: string, source: WorkflowSource): string {
  const [repository, ref] = source.action.split("@") as [string, string];
  const comment = source.label ? ` # ${source.label}` : "";
  const text = readFileSync(join(templatesDir(), "workflows", name), "utf8")
    .replace(/^(\s+uses: )agentrelay\/agentrelay@\S+$/gm, `$1${source.action}${comment}`)
    .replace(
      /^(\s+uses: )agentrelay\/agentrelay\/orchestrate@\S+$/gm,
      `$1${repository}/orchestrate@${ref}${comment}`,
    );
  const { image } = source;
  if ("published" in image)
    return text.replace(/^(\s+image: )ghcr\.io\/agentrelay\/agentrelay-agent:\S+$/gm, `$1${image.published}`);
  if (!/^\s+image: ghcr\.io\/agentrelay\/agentrelay-agent:/m.test(text)) return text;
  const lines = runInBuiltImage(text.split("\n"));
  const jobs = lines.indexOf("jobs:");
  return [...lines.slice(0, jobs + 1), ...imageJob(image.build, image.tag), ...lines.slice(jobs + 1)].join(
    "\n",
  );
}

/** The first line of a workflow init wrote: the hash of the rest, so that init knows whether it was edited. */
const markerLine = (hash: string) =>
  `# Written by \`agentrelay init\` (sha256 ${hash} of the lines below: init replaces this file while they match).\n`;
const MARKER = /^# Written by `agentrelay init` \(sha256 ([0-9a-f]{16}) of the lines below[^\n]*\n/;

const digest = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 16);

export const marked = (text: string): string => `${markerLine(digest(text))}${text}`;

/** Whether `text` is a workflow init wrote that nobody has edited since. */
export function unedited(text: string): boolean {
  const match = MARKER.exec(text);
  return match !== null && digest(text.slice(match[0].length)) === match[1];
}

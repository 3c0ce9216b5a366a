/**
 * Where the workflows `agentrelay init` writes take the Action and the agent image from. By default,
 * from the clone the command runs from: the Action pinned to the clone's commit on the GitHub
 * repository it was cloned from (the project's, or a fork), and the image built by the workflow from
 * that commit's Dockerfile; nothing this project publishes is needed. `--release vX.Y.Z`: the
 * project's release, its Action pinned to the release's commit and its published image.
 */
import { execFileSync } from "node:child_process";
import pkg from "../../../package.json" with { type: "json" };
import { InputError } from "../io.ts";
import { githubRepository } from "./github-remote.ts";
import type { WorkflowSource } from "./workflow-text.ts";

const git = (dir: string, args: string[]): string | null => {
  try {
    return execFileSync("git", ["-C", dir, ...args], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return null;
  }
};

/** The project's repository on GitHub, as package.json names it. */
export const PROJECT = githubRepository(pkg.repository.url)!;

/** The clone's commit and the GitHub repository it came from, where GitHub can fetch that commit. */
function cloneCommit(toolDir: string): { repository: string; commit: string } {
  const sha = git(toolDir, ["rev-parse", "--verify", "HEAD^{commit}"]);
  if (!sha || !/^[0-9a-f]{40}$/.test(sha))
    throw new InputError(
      `agentrelay at ${toolDir} is not a git clone, so the workflows cannot be pinned to its commit: ` +
        `run it from a clone (git clone https://github.com/${PROJECT}), or pass --release vX.Y.Z`,
    );
  // As cloned (`remote get-url` would apply the user's url.*.insteadOf rewrites).
  const origin = git(toolDir, ["config", "--get", "remote.origin.url"]);
  const repository = origin ? githubRepository(origin) : null;
  if (!repository)
    throw new InputError(
      `the clone at ${toolDir} was not cloned from GitHub (origin: ${origin ?? "none"}), where the workflows ` +
        "fetch the Action: clone agentrelay (or your fork of it) from GitHub, or pass --action and --image",
    );
  // A commit only this machine has cannot be fetched by GitHub: it must be on the remote already.
  const known =
    git(toolDir, ["for-each-ref", "--contains", sha, "--count=1", "refs/remotes/origin/"]) ||
    git(toolDir, ["tag", "--points-at", sha]);
  if (!known)
    throw new InputError(
      `the clone's commit ${sha.slice(0, 12)} is not on ${repository} (nothing of origin holds it): ` +
        `push it (git -C ${toolDir} push), or check out a commit that is there`,
    );
  return { repository, commit: sha };
}

/** The project's release `tag`, which must be this clone's version (its workflows fit that Action). */
function release(toolDir: string, tag: string): WorkflowSource {
  if (tag !== `v${pkg.version}`)
    throw new InputError(
      `this clone is agentrelay ${pkg.version}, whose workflows fit the release v${pkg.version}, not ${tag}: ` +
        `run init from a clone of ${tag} (git clone --branch ${tag} https://github.com/${PROJECT})`,
    );
  const commit = git(toolDir, ["rev-parse", "--verify", "--quiet", `refs/tags/${tag}^{commit}`]);
  const owner = PROJECT.split("/")[0]!.toLowerCase();
  return {
    action: `${PROJECT}@${commit ?? tag}`,
    label: commit ? tag : null,
    image: { published: `ghcr.io/${owner}/agentrelay-agent:${tag}` },
  };
}

export interface SourceOptions {
  release?: string | undefined;
  action?: string | undefined;
  image?: string | undefined;
}

/** Where the workflows take the Action and the image from, for init run from `toolDir` with `options`. */
export function workflowSource(toolDir: string, options: SourceOptions): WorkflowSource {
  let source: WorkflowSource | null = options.release ? release(toolDir, options.release) : null;
  if (!source && !(options.action && options.image)) {
    const { repository, commit } = cloneCommit(toolDir);
    source = {
      action: `${repository}@${commit}`,
      label: `agentrelay ${pkg.version}, the commit of your clone`,
      image: { build: `https://github.com/${repository}.git#${commit}:images/agent`, tag: commit },
    };
  }
  return {
    action: options.action ?? source!.action,
    label: options.action ? null : source!.label,
    image: options.image ? { published: options.image } : source!.image,
  };
}

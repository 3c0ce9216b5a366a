/**
 * `agentrelay init --no-app --gh`: the two settings of a first run that GitHub's API can make, made
 * through the GitHub CLI the user is logged in with: the repository secret with the Anthropic
 * credential (`gh secret set NAME`, the value on gh's standard input, never on a command line, where
 * other users of the machine could read it), and "Allow GitHub Actions to create and approve pull
 * requests" (`gh api --method PUT .../actions/permissions/workflow`, which needs the repository's
 * admin: https://docs.github.com/en/rest/actions/permissions#set-default-workflow-permissions-for-a-repository).
 * Each says in one line what it did, or why not and what to do instead.
 */
import { spawnSync } from "node:child_process";

/** What `--gh` set, so that the next steps leave those out. */
export interface GhSettings {
  secret: boolean;
  setting: boolean;
  lines: string[];
}

/** The Anthropic credential the environment holds, by the secret name the workflows read. */
function credential(env: NodeJS.ProcessEnv): { name: string; value: string } | null {
  for (const name of ["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"]) {
    const value = env[name]?.trim();
    if (value) return { name, value };
  }
  return null;
}

/** gh's answer: exit code and what it said, or null when there is no gh to run. */
function gh(args: string[], env: NodeJS.ProcessEnv, input?: string): { code: number; said: string } | null {
  // gh needs none of the credentials: they go on its standard input or nowhere.
  const { ANTHROPIC_API_KEY: _a, CLAUDE_CODE_OAUTH_TOKEN: _c, ...rest } = env;
  const result = spawnSync("gh", args, { env: rest, input: input ?? "", encoding: "utf8", timeout: 60_000 });
  if (result.error) return null;
  return { code: result.status ?? 1, said: `${result.stdout ?? ""}${result.stderr ?? ""}` };
}

export function setUpWithGh(repository: string | null, env: NodeJS.ProcessEnv): GhSettings {
  if (!repository)
    return {
      secret: false,
      setting: false,
      lines: ["--gh: no GitHub remote named origin here: add it, then run init --no-app --gh again"],
    };
  const lines: string[] = [];
  let secret = false;
  const key = credential(env);
  if (!key)
    lines.push(
      "--gh: no ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN in the environment, so no secret was set: add one as below",
    );
  else {
    const answer = gh(["secret", "set", key.name, "--repo", repository], env, key.value);
    if (!answer)
      return {
        secret: false,
        setting: false,
        lines: [
          "--gh: the GitHub CLI (gh) is not installed: install it and `gh auth login`, or take the steps below",
        ],
      };
    secret = answer.code === 0;
    lines.push(
      secret
        ? `set the secret ${key.name} of ${repository} through gh (the value from your environment, on gh's standard input)`
        : `--gh: gh could not set the secret ${key.name} (${firstLine(answer.said)}): add it as below`,
    );
  }
  const answer = gh(
    [
      "api",
      "--method",
      "PUT",
      `repos/${repository}/actions/permissions/workflow`,
      "-F",
      "can_approve_pull_request_reviews=true",
    ],
    env,
  );
  const setting = answer?.code === 0;
  lines.push(
    setting
      ? `turned on "Allow GitHub Actions to create and approve pull requests" for ${repository} through gh`
      : !answer
        ? "--gh: the GitHub CLI (gh) is not installed: tick the setting as below"
        : /HTTP 409/.test(answer.said)
          ? `--gh: ${repository}'s organisation does not allow GitHub Actions to create pull requests: an organisation owner turns it on (organisation Settings, Actions, General, Workflow permissions)`
          : `--gh: gh could not turn on "Allow GitHub Actions to create and approve pull requests" (${firstLine(answer.said)}; it needs admin on the repository): tick it as below`,
  );
  return { secret, setting, lines };
}

const firstLine = (text: string) => text.trim().split("\n")[0]?.slice(0, 200) || "no answer";

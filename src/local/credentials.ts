/**
 * agentrelay's credentials file (`--credentials FILE`), for local runs:
 *
 *   token_tiers:                 # tier name -> environment variables for tasks of that tier
 *     standard: {GH_TOKEN: ...}
 *   anthropic:                   # credential name -> how Claude Code authenticates
 *     dev_key:  {type: api_key, key: sk-ant-...}        # or key_file: ~/path (exactly one)
 *     max_plan: {type: oauth, path: ~/.claude/.credentials.json}
 *
 * The same load rules and selection rules as agentrelay, with errors located at their node.
 */
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { GraphError, type GraphIssue } from "../graph/errors.ts";
import type { Graph } from "../graph/model.ts";
import { loadYaml } from "../graph/yaml.ts";

export type AnthropicCredential =
  { name: string; type: "api_key"; key: string } | { name: string; type: "oauth"; path: string };

export interface Credentials {
  tokenTiers: Record<string, Record<string, string>> | null;
  anthropic: AnthropicCredential[];
}

const expand = (path: string) =>
  path === "~" || path.startsWith("~/") ? join(homedir(), path.slice(1)) : path;
const isMapping = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v);

export function loadCredentials(file: string): Credentials {
  const yaml = loadYaml(file, readFileSync(file, "utf8"));
  const issues: GraphIssue[] = [];
  const fail = (path: (string | number)[], shown: string, message: string) =>
    issues.push(yaml.issue(path, shown, message));
  const root = yaml.value;
  if (!isMapping(root)) throw new GraphError([yaml.issue([], "", "the credentials file must be a mapping")]);

  let tokenTiers: Credentials["tokenTiers"] = null;
  if (root.token_tiers !== undefined) {
    if (!isMapping(root.token_tiers))
      fail(["token_tiers"], "token_tiers", "must be a mapping of tier name to variables");
    else {
      tokenTiers = {};
      for (const [tier, vars] of Object.entries(root.token_tiers)) {
        if (!isMapping(vars)) {
          fail(
            ["token_tiers", tier],
            `token_tiers.${tier}`,
            "must be a mapping of environment variable to value",
          );
          continue;
        }
        if ("ANTHROPIC_API_KEY" in vars) {
          fail(
            ["token_tiers", tier, "ANTHROPIC_API_KEY"],
            `token_tiers.${tier}`,
            "may not set ANTHROPIC_API_KEY; use the anthropic section",
          );
        }
        tokenTiers[tier] = Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, String(v)]));
      }
    }
  }

  const anthropic: AnthropicCredential[] = [];
  if (root.anthropic !== undefined && root.anthropic !== null) {
    if (!isMapping(root.anthropic))
      fail(["anthropic"], "anthropic", "must be a mapping of credential name to entry");
    else {
      for (const [name, entry] of Object.entries(root.anthropic)) {
        const at = ["anthropic", name];
        const shown = `anthropic.${name}`;
        if (!isMapping(entry)) {
          fail(at, shown, "must be a mapping");
          continue;
        }
        if (entry.type === "api_key") {
          const hasKey = entry.key !== undefined && entry.key !== null;
          const hasFile = entry.key_file !== undefined && entry.key_file !== null;
          if (hasKey === hasFile) {
            fail(at, shown, "an api_key credential needs exactly one of 'key' or 'key_file'");
            continue;
          }
          if (hasKey) {
            anthropic.push({ name, type: "api_key", key: String(entry.key).trim() });
            continue;
          }
          const keyFile = expand(String(entry.key_file));
          if (!existsSync(keyFile)) {
            fail([...at, "key_file"], `${shown}.key_file`, `key file '${keyFile}' does not exist`);
            continue;
          }
          anthropic.push({ name, type: "api_key", key: readFileSync(keyFile, "utf8").trim() });
        } else if (entry.type === "oauth") {
          if (typeof entry.path !== "string" || !entry.path.trim()) {
            fail(at, shown, "an oauth credential needs 'path'");
            continue;
          }
          anthropic.push({ name, type: "oauth", path: expand(entry.path.trim()) });
        } else {
          fail(
            [...at, "type"],
            `${shown}.type`,
            `invalid type '${String(entry.type)}'. Allowed: api_key, oauth`,
          );
        }
      }
    }
  }
  if (issues.length > 0) throw new GraphError(issues);
  return { tokenTiers, anthropic };
}

export class CredentialError extends Error {
  override name = "CredentialError";
}

/** The credential to use: `--anthropic-credential`, else the graph's `anthropic_credential`, else the only one. */
export function selectAnthropic(
  credentials: Credentials,
  cliName: string | undefined,
  graph: Graph,
): AnthropicCredential | null {
  if (credentials.anthropic.length === 0) return null;
  const name = cliName ?? graph.settings.anthropicCredential ?? undefined;
  const names = credentials.anthropic.map((c) => c.name).join(", ");
  if (name === undefined) {
    if (credentials.anthropic.length === 1) return credentials.anthropic[0]!;
    throw new CredentialError(
      `several anthropic credentials (${names}): choose one with --anthropic-credential or anthropic_credential`,
    );
  }
  const found = credentials.anthropic.find((c) => c.name === name);
  if (!found)
    throw new CredentialError(`unknown anthropic credential '${name}'; the credentials file has: ${names}`);
  return found;
}

/** Every token tier the graph's tasks use must be in the file (when it has token_tiers). */
export function checkTiers(credentials: Credentials, graph: Graph): void {
  if (!credentials.tokenTiers) return;
  const missing = [...new Set(graph.tasks.map((t) => t.primaryAgent.isolation.tokenTier))].filter(
    (tier) => !credentials.tokenTiers![tier],
  );
  if (missing.length > 0) {
    throw new CredentialError(
      `the credentials file has no token tier ${missing.map((m) => `'${m}'`).join(", ")}, which the graph's tasks use`,
    );
  }
}

/**
 * Environment for the attempt runner: an API key as ANTHROPIC_API_KEY, an OAuth credentials file
 * as AGENTRELAY_CLAUDE_LOGIN (read by the runner's credential proxy, never copied where the agent is).
 */
export function anthropicEnvironment(credential: AnthropicCredential | null): Record<string, string> {
  if (!credential) return {};
  if (credential.type === "api_key") return { ANTHROPIC_API_KEY: credential.key };
  if (!existsSync(credential.path))
    throw new CredentialError(`oauth credentials file '${credential.path}' does not exist`);
  return { AGENTRELAY_CLAUDE_LOGIN: credential.path };
}

/** The user's own Claude login, where Claude Code keeps it on Linux and Windows, if there is one. */
export function userLogin(home = homedir()): string | null {
  const file = join(home, ".claude", ".credentials.json");
  return existsSync(file) ? file : null;
}

/**
 * agentrelay's credentials file (`--credentials FILE`), for local runs (docs/cli.md, "The credentials
 * file"):
 *
 *   token_tiers:                 # tier name -> environment variables for tasks of that tier
 *     standard: {GH_TOKEN: ...}
 *   anthropic:                   # credential name -> how Claude Code authenticates
 *     dev_key:  {type: api_key, key: sk-ant-...}        # or key_file: ~/path (exactly one)
 *     max_plan: {type: oauth, path: ~/.claude/.credentials.json}
 *
 * The same load rules and selection rules as agentrelay, with errors located at their node.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { GraphError, type GraphIssue } from "../graph/errors.ts";
import type { Graph } from "../graph/model.ts";
import { loadYaml } from "../graph/yaml.ts";
import { credentialOf } from "../attempt/credential.ts";
import { SCRIPTED_MODEL_VARIABLE } from "../attempt/network.ts";

/** Where the credentials file's format is documented, for messages about the file. */
export const CREDENTIALS_DOC = 'docs/cli.md, "The credentials file"';

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

/** The credentials file's text, or a CredentialError that says what is wrong with the path. */
function readCredentialsFile(file: string): string {
  const instead = `pass the path of one (its format: ${CREDENTIALS_DOC}), or leave out --credentials to use your own login`;
  if (!existsSync(file)) throw new CredentialError(`the credentials file ${file} does not exist: ${instead}`);
  if (!statSync(file).isFile())
    throw new CredentialError(`the credentials file ${file} is not a file: ${instead}`);
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    throw new CredentialError(
      `the credentials file ${file} cannot be read (${(error as NodeJS.ErrnoException).code}): let your user read it (chmod u+r)`,
    );
  }
}

export function loadCredentials(file: string): Credentials {
  const yaml = loadYaml(file, readCredentialsFile(file));
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

/** The Anthropic credential a local run gives its attempts, and what the user does about it. */
export interface LocalCredential {
  /** Variables for the attempt's runner: the credentials file's choice, or the user's login file. */
  env: Record<string, string>;
  /** How to give a credential when there is none. */
  logIn: string;
  /** How to replace the credential when the model API refuses it. */
  fixCredential: string;
}

const NO_ACCOUNT = "(--scripted-model needs no account)";

/**
 * The credential of a local run, in this order: the credentials file's `anthropic` entry; else a
 * credential in the environment (ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN, ANTHROPIC_AUTH_TOKEN);
 * else the user's Claude login. A file without an `anthropic` entry (token tiers only) changes
 * nothing of that. Each source has its own fix, so that a message never suggests what the user did.
 */
export function localCredential(options: {
  /** `--credentials FILE`, and the entry chosen in it (null: it has none). */
  file: { path: string; anthropic: AnthropicCredential | null } | null;
  /** The environment the attempt inherits (the runner's and the agent's). */
  env: NodeJS.ProcessEnv;
  /** The user's Claude login file, if there is one (userLogin). */
  login: string | null;
}): LocalCredential {
  const { file, env, login } = options;
  const chosen = file?.anthropic;
  if (chosen) {
    // The entry the user chose wins over a credential the environment happens to carry.
    const others = { ANTHROPIC_API_KEY: "", CLAUDE_CODE_OAUTH_TOKEN: "", ANTHROPIC_AUTH_TOKEN: "" };
    return {
      env: { ...others, ...anthropicEnvironment(chosen) },
      logIn: "",
      fixCredential:
        chosen.type === "api_key"
          ? `give anthropic.${chosen.name} in ${file.path} a key the API accepts`
          : `log in again (run \`claude\`, then /login) so that ${chosen.path} holds a login the API accepts`,
    };
  }
  const logIn = file
    ? `${file.path} has no anthropic entry: add one (its format: ${CREDENTIALS_DOC}), set ANTHROPIC_API_KEY, or run \`claude\` and log in (/login) ${NO_ACCOUNT}`
    : `run \`claude\` and log in (/login), set ANTHROPIC_API_KEY, or pass --credentials FILE ${NO_ACCOUNT}`;
  const carried = credentialOf(env);
  if (env[SCRIPTED_MODEL_VARIABLE] === "1")
    return { env: {}, logIn, fixCredential: "it is agentrelay's own scripted model: report it" };
  if (carried?.kind === "api_key")
    return {
      env: {},
      logIn,
      fixCredential:
        "set ANTHROPIC_API_KEY to a key the API accepts (or unset it to use your `claude` login)",
    };
  if (carried) {
    const variable = env.CLAUDE_CODE_OAUTH_TOKEN ? "CLAUDE_CODE_OAUTH_TOKEN" : "ANTHROPIC_AUTH_TOKEN";
    return {
      env: {},
      logIn,
      fixCredential: `set ${variable} to a token the API accepts (\`claude setup-token\` makes one)`,
    };
  }
  return {
    env: login ? { AGENTRELAY_CLAUDE_LOGIN: login } : {},
    logIn,
    fixCredential: "log in again (run `claude`, then /login)",
  };
}

/**
 * The Anthropic credential an attempt's runner holds (never the agent): where it comes from in the
 * environment, the headers that present it upstream, and why it cannot be used as it is.
 */
import { existsSync, readFileSync } from "node:fs";
import type { Trouble } from "./network.ts";

export type Credential =
  | { kind: "api_key"; key: string }
  | { kind: "oauth_token"; token: string }
  /** A Claude login (`~/.claude/.credentials.json`), read on every request so a refreshed token is used. */
  | { kind: "oauth_file"; path: string };

/** Variables that carry a credential to Claude Code: none of them reaches the agent. */
export const CREDENTIAL_VARIABLES = [
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_AUTH_TOKEN",
  "CLAUDE_CODE_OAUTH_TOKEN",
  "AGENTRELAY_CLAUDE_LOGIN",
] as const;

/** The credential an environment carries (AGENTRELAY_CLAUDE_LOGIN names a login file), or null. */
export function credentialOf(env: NodeJS.ProcessEnv): Credential | null {
  if (env.ANTHROPIC_API_KEY) return { kind: "api_key", key: env.ANTHROPIC_API_KEY };
  const token = env.CLAUDE_CODE_OAUTH_TOKEN || env.ANTHROPIC_AUTH_TOKEN;
  if (token) return { kind: "oauth_token", token };
  if (env.AGENTRELAY_CLAUDE_LOGIN) return { kind: "oauth_file", path: env.AGENTRELAY_CLAUDE_LOGIN };
  return null;
}

/** A credential that cannot be used: what is wrong with it, and what to do. */
export class CredentialError extends Error {
  override name = "CredentialError";
  constructor(readonly trouble: Trouble) {
    super(`${trouble.problem}: ${trouble.fix}`);
  }
}

/** The OAuth access token of a Claude login file, or why it cannot be used. */
function loginToken(path: string, now = Date.now()): string {
  const logIn = "run `claude` and log in (/login)";
  if (!existsSync(path))
    throw new CredentialError({ problem: `the Claude login file ${path} does not exist`, fix: logIn });
  let login: { claudeAiOauth?: { accessToken?: string; expiresAt?: number } };
  try {
    login = JSON.parse(readFileSync(path, "utf8")) as typeof login;
  } catch {
    throw new CredentialError({ problem: `the Claude login file ${path} is not JSON`, fix: logIn });
  }
  const oauth = login.claudeAiOauth;
  if (!oauth?.accessToken)
    throw new CredentialError({ problem: `the Claude login file ${path} holds no access token`, fix: logIn });
  if (oauth.expiresAt && oauth.expiresAt < now)
    throw new CredentialError({
      problem: `the Claude login in ${path} has expired`,
      fix: "run `claude` once to renew it",
    });
  return oauth.accessToken;
}

/** Why `credential` cannot be used as it is (a login file missing, unreadable or expired), or null. */
export function credentialProblem(credential: Credential): Trouble | null {
  if (credential.kind !== "oauth_file") return null;
  try {
    loginToken(credential.path);
    return null;
  } catch (error) {
    if (error instanceof CredentialError) return error.trouble;
    throw error;
  }
}

const OAUTH_BETA = "oauth-2025-04-20";

/**
 * The headers that authenticate a request upstream: the credential, and for an OAuth token the beta
 * the Messages API wants with one (added to the request's own `anthropic-beta`, if any).
 */
export function authHeaders(credential: Credential, beta?: string | string[]): Record<string, string> {
  if (credential.kind === "api_key") return { "x-api-key": credential.key };
  const token = credential.kind === "oauth_token" ? credential.token : loginToken(credential.path);
  const betas = String(beta ?? "")
    .split(",")
    .filter(Boolean);
  if (!betas.includes(OAUTH_BETA)) betas.push(OAUTH_BETA);
  return { authorization: `Bearer ${token}`, "anthropic-beta": betas.join(",") };
}

/** Every value of a credential, for masking (a login file's token as it is now). */
export function credentialSecrets(credential: Credential | null): string[] {
  if (!credential) return [];
  if (credential.kind === "api_key") return [credential.key];
  if (credential.kind === "oauth_token") return [credential.token];
  try {
    return [loginToken(credential.path, 0)];
  } catch {
    return [];
  }
}

/**
 * The Anthropic credential stays out of the agent. The runner starts this forwarding proxy on the
 * loopback interface, holding the credential; Claude Code is given only the proxy's address
 * (`ANTHROPIC_BASE_URL`) and a throwaway key made for this attempt. The proxy accepts requests that
 * carry the throwaway key and forwards them upstream with the real credential in its place, so a
 * prompt-injected agent that prints its environment or reads its home finds nothing worth taking.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, request as httpRequest, type ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import type { AddressInfo } from "node:net";
import { ANTHROPIC_API, modelApiUnreachable, networkCause } from "./network.ts";

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

export class CredentialError extends Error {
  override name = "CredentialError";
}

/** The OAuth access token of a Claude login file, or why it cannot be used. */
function loginToken(path: string, now = Date.now()): string {
  if (!existsSync(path)) throw new CredentialError(`the Claude login file ${path} does not exist`);
  let login: { claudeAiOauth?: { accessToken?: string; expiresAt?: number } };
  try {
    login = JSON.parse(readFileSync(path, "utf8")) as typeof login;
  } catch {
    throw new CredentialError(`the Claude login file ${path} is not JSON`);
  }
  const oauth = login.claudeAiOauth;
  if (!oauth?.accessToken) throw new CredentialError(`the Claude login file ${path} holds no access token`);
  if (oauth.expiresAt && oauth.expiresAt < now)
    throw new CredentialError(`the Claude login in ${path} has expired: run \`claude\` once to renew it`);
  return oauth.accessToken;
}

/** Why `credential` cannot be used as it is (a login file missing, unreadable or expired), or null. */
export function credentialProblem(credential: Credential): string | null {
  if (credential.kind !== "oauth_file") return null;
  try {
    loginToken(credential.path);
    return null;
  } catch (error) {
    if (error instanceof CredentialError) return error.message;
    throw error;
  }
}

/** The headers that authenticate a request upstream. */
function authHeaders(credential: Credential): Record<string, string> {
  if (credential.kind === "api_key") return { "x-api-key": credential.key };
  const token = credential.kind === "oauth_token" ? credential.token : loginToken(credential.path);
  return { authorization: `Bearer ${token}` };
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

const HOP_BY_HOP = new Set([
  "host",
  "connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
  "proxy-authorization",
  "x-api-key",
  "authorization",
]);

export interface CredentialProxy {
  /** The address Claude Code is given as ANTHROPIC_BASE_URL. */
  url: string;
  /** The throwaway key Claude Code is given as ANTHROPIC_API_KEY. */
  key: string;
  close(): Promise<void>;
}

const OAUTH_BETA = "oauth-2025-04-20";

/** How long the model API may stay unreachable (no answer to any request) before the agent is stopped. */
export const UNREACHABLE_GRACE_MS = 10_000;

/**
 * Starts the proxy. `onStop` hears, with the reason, when the agent cannot go on: at once when the
 * credential cannot be used (a login that expired, an upstream 401 or 403), and when the model API
 * has been unreachable for `graceMs` (a network that dropped). Claude Code itself would retry for
 * minutes before saying so, and then in words about this proxy ("check your inference gateway")
 * rather than about the user's network.
 */
export async function startCredentialProxy(
  credential: Credential,
  upstream: string = ANTHROPIC_API,
  onStop: (reason: string) => void = () => {},
  graceMs = UNREACHABLE_GRACE_MS,
): Promise<CredentialProxy> {
  const key = `sk-ant-agentrelay-${randomBytes(24).toString("hex")}`;
  const base = new URL(upstream);
  // Unreachable since the first failure with no answer after it; a blip shorter than the grace is ridden out.
  let unreachableTimer: NodeJS.Timeout | undefined;
  let lastCause = "";
  const reached = () => {
    clearTimeout(unreachableTimer);
    unreachableTimer = undefined;
  };
  const failed = (cause: string) => {
    lastCause = cause;
    unreachableTimer ??= setTimeout(() => onStop(modelApiUnreachable(upstream, lastCause)), graceMs);
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const presented = req.headers["x-api-key"] ?? req.headers.authorization?.replace(/^Bearer /, "");
    if (presented !== key) {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(
        JSON.stringify({ type: "error", error: { type: "authentication_error", message: "unknown key" } }),
      );
      return;
    }
    let auth: Record<string, string>;
    try {
      auth = authHeaders(credential);
    } catch (error) {
      res.writeHead(401, { "content-type": "application/json" });
      const message = (error as Error).message;
      res.end(JSON.stringify({ type: "error", error: { type: "authentication_error", message } }));
      onStop(`Claude Code could not authenticate: ${message}`);
      return;
    }
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers))
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    Object.assign(headers, auth);
    if (credential.kind !== "api_key") {
      const betas = String(headers["anthropic-beta"] ?? "")
        .split(",")
        .filter(Boolean);
      if (!betas.includes(OAUTH_BETA)) headers["anthropic-beta"] = [...betas, OAUTH_BETA].join(",");
    }
    const target = new URL(req.url ?? "/", base);
    target.pathname = `${base.pathname.replace(/\/$/, "")}${target.pathname}`;
    const send = target.protocol === "https:" ? httpsRequest : httpRequest;
    const out = send(target, { method: req.method, headers }, (answer) => {
      reached();
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      if (answer.statusCode === 401 || answer.statusCode === 403) {
        let body = "";
        answer.setEncoding("utf8");
        answer.on("data", (chunk: string) => (body += chunk.slice(0, 4096)));
        answer.on("end", () => {
          let reason = `the Anthropic API refused the credential (${answer.statusCode})`;
          try {
            const message = (JSON.parse(body) as { error?: { message?: string } }).error?.message;
            if (message) reason += `: ${message}`;
          } catch {
            // not JSON: the status says enough
          }
          onStop(`Claude Code could not authenticate: ${reason}`);
          res.end(body);
        });
        return;
      }
      answer.pipe(res);
    });
    out.on("error", (error) => {
      const cause = networkCause(error);
      failed(cause);
      if (!res.headersSent) res.writeHead(502, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          type: "error",
          error: { type: "api_error", message: modelApiUnreachable(upstream, cause) },
        }),
      );
    });
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    key,
    close: () =>
      new Promise((resolve) => {
        clearTimeout(unreachableTimer);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * What the agent needs of this machine, checked before a run spends an attempt on it: Claude Code
 * found and of a version we support, a credential it can use, and the model API answering within a
 * few seconds. Without this check the first attempt is where a newcomer learns that `claude` is not
 * installed or not logged in, and a machine without network waits minutes for Claude Code's retries.
 * Each problem is one line that says what to do. Local mode checks before its run starts (or resumes);
 * the Action checks before the agent starts and reports an attempt that does not count.
 */
import { execFile } from "node:child_process";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { authHeaders, type Credential, credentialOf, credentialProblem } from "./credential.ts";
import { upstreamUrl } from "./model-api-calls.ts";
import {
  credentialRefused,
  type ModelApi,
  modelApiOf,
  modelApiUnreachable,
  type NetworkCause,
  networkCause,
  sayTrouble,
} from "./network.ts";

/** The agent cannot work here; the message says what to do. */
export class AgentUnavailableError extends Error {
  override name = "AgentUnavailableError";
}

/**
 * The oldest Claude Code agentrelay runs: it passes flags that older versions do not have
 * (`--max-budget-usd` arrived late in 2025, in 2.0), and it is tested with the version package.json pins.
 */
export const MIN_CLAUDE_CODE = "2.1.0";

/** The Claude Code the tests and the agent image run, which a user is told to install (a test keeps it package.json's). */
export const TESTED_CLAUDE_CODE = "2.1.197";
const INSTALL_CLAUDE_CODE = `npm install -g @anthropic-ai/claude-code@${TESTED_CLAUDE_CODE}`;

/** How long the model API may take to answer the check. */
export const REACH_TIMEOUT_MS = 10_000;

export interface AgentCheck {
  /** The Claude Code executable, as the attempt would start it. */
  bin: string;
  /** The environment the attempt would give it (its credential, ANTHROPIC_BASE_URL, PATH). */
  env: NodeJS.ProcessEnv;
  /** How a user of this host names another executable ("pass --claude PATH", say). */
  nameAnother: string;
  /** How a user of this host gives a credential. */
  logIn: string;
  /** How a user of this host replaces a credential the model API refuses (default: `logIn`). */
  fixCredential?: string;
  timeoutMs?: number;
}

/** Checks the agent; throws AgentUnavailableError with what to do. Returns Claude Code's version. */
export async function checkAgent(check: AgentCheck): Promise<string> {
  const version = await claudeVersion(check);
  const credential = credentialOf(check.env);
  if (!credential) throw new AgentUnavailableError(`Claude Code is not logged in here: ${check.logIn}`);
  const problem = credentialProblem(credential);
  if (problem) throw new AgentUnavailableError(sayTrouble(problem, "run again"));
  const api = modelApiOf(check.env);
  const answer = await tryCredential(api, credential, check.timeoutMs ?? REACH_TIMEOUT_MS);
  if ("cause" in answer)
    throw new AgentUnavailableError(sayTrouble(modelApiUnreachable(api, answer), "run again"));
  if (refused(credential, answer))
    throw new AgentUnavailableError(
      sayTrouble(
        {
          problem: credentialRefused(api, answer.status, answer.said),
          fix: check.fixCredential ?? check.logIn,
        },
        "run again",
      ),
    );
  return version;
}

const older = (a: number[], b: number[]) => {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! < b[i]!;
  return false;
};

/** `claude --version`, as the attempt would run it. */
function claudeVersion({ bin, env, nameAnother }: AgentCheck): Promise<string> {
  const install = `install it with \`${INSTALL_CLAUDE_CODE}\``;
  return new Promise((resolve, reject) => {
    execFile(bin, ["--version"], { env, timeout: 30_000, encoding: "utf8" }, (error, stdout, stderr) => {
      const code = (error as NodeJS.ErrnoException | null)?.code;
      if (code === "ENOENT")
        return reject(
          new AgentUnavailableError(`Claude Code was not found (${bin}): ${install}, or ${nameAnother}`),
        );
      if (code === "EACCES")
        return reject(
          new AgentUnavailableError(`${bin} is not executable: fix its permissions, or ${nameAnother}`),
        );
      if (error) {
        const said = `${stderr}`.trim().split("\n").at(-1) || error.message.split("\n")[0];
        return reject(
          new AgentUnavailableError(
            `\`${bin} --version\` failed (${said}): reinstall Claude Code, or ${nameAnother}`,
          ),
        );
      }
      const found = /(\d+)\.(\d+)\.(\d+)/.exec(stdout);
      if (!found)
        return reject(
          new AgentUnavailableError(
            `${bin} does not look like Claude Code (\`--version\` printed '${stdout.trim().slice(0, 80)}'): ${nameAnother}`,
          ),
        );
      const version = found[0];
      if (older(found.slice(1).map(Number), MIN_CLAUDE_CODE.split(".").map(Number)))
        return reject(
          new AgentUnavailableError(
            `Claude Code ${version} is older than ${MIN_CLAUDE_CODE}, the oldest agentrelay supports: update it with \`${INSTALL_CLAUDE_CODE}\``,
          ),
        );
      resolve(version);
    });
  });
}

/**
 * Whether the check's answer refuses the credential. An OAuth login is refused only by words about
 * the login: an endpoint that takes no OAuth at all answers "OAuth authentication is currently not
 * supported", which says nothing of a login Claude Code itself can use on the Messages API.
 */
function refused(credential: Credential, answer: { status: number; said?: string }): boolean {
  if (answer.status !== 401 && answer.status !== 403) return false;
  return (
    credential.kind === "api_key" ||
    !/OAuth authentication is currently not supported/i.test(answer.said ?? "")
  );
}

/** The model the check names: any will do, since the API checks the credential before the model. */
const CHECK_MODEL = "claude-haiku-4-5";

/**
 * Asks the model API something that costs nothing with the credential: counting the tokens of a
 * one-line message ("Token counting is free to use", Anthropic's docs, Token counting, Pricing and
 * rate limits). Any answer but 401 and 403 means the API is there and takes the credential (a gateway
 * without `count_tokens` answers 404, a busy API 429 or 529: the attempt meets those itself); no
 * answer within `timeoutMs`, or none at all, is the network's.
 */
export function tryCredential(
  api: ModelApi,
  credential: Credential,
  timeoutMs: number,
): Promise<{ status: number; said?: string } | NetworkCause> {
  return new Promise((resolve) => {
    const url = upstreamUrl(new URL(api.url), { ok: true, path: "/v1/messages/count_tokens", query: "" });
    const body = JSON.stringify({
      model: CHECK_MODEL,
      messages: [{ role: "user", content: "agentrelay checks its credential" }],
    });
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    const request = send(
      url,
      {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "anthropic-version": "2023-06-01",
          ...authHeaders(credential),
        },
      },
      (answer) => {
        let text = "";
        answer.setEncoding("utf8");
        answer.on("data", (chunk: string) => (text = (text + chunk).slice(0, 4096)));
        answer.on("error", () => {});
        answer.on("end", () => {
          clearTimeout(deadline);
          let said: string | undefined;
          try {
            said = (JSON.parse(text) as { error?: { message?: string } }).error?.message;
          } catch {
            // not JSON: the status says enough
          }
          resolve({ status: answer.statusCode ?? 0, ...(said ? { said } : {}) });
        });
      },
    );
    const deadline = setTimeout(() => {
      resolve({ cause: `no answer within ${timeoutMs / 1000} s` });
      request.destroy();
    }, timeoutMs);
    request.on("error", (error) => {
      clearTimeout(deadline);
      resolve(networkCause(error, api.url));
    });
    request.end(body);
  });
}

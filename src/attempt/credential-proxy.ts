/**
 * The Anthropic credential stays out of the agent. The runner starts this forwarding proxy on the
 * loopback interface, holding the credential; Claude Code is given only the proxy's address
 * (`ANTHROPIC_BASE_URL`) and a throwaway key made for this attempt. The proxy accepts requests that
 * carry the throwaway key and forwards them upstream with the real credential in its place, so a
 * prompt-injected agent that prints its environment or reads its home finds nothing worth taking.
 *
 * It forwards only to the upstream fixed when it starts, and only the model API's calls
 * (model-api-calls.ts): whatever a request names, the credential goes nowhere else.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, request as httpRequest, type ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { authHeaders, type Credential, CredentialError } from "./credential.ts";
import { modelApiCall, upstreamUrl } from "./model-api-calls.ts";
import {
  ANTHROPIC_API,
  credentialRefused,
  type ModelApi,
  modelApiUnreachable,
  type NetworkCause,
  networkCause,
  type Trouble,
} from "./network.ts";

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

/** How long the model API may stay unreachable (no answer to any request) before the agent is stopped. */
export const UNREACHABLE_GRACE_MS = 10_000;

/**
 * How long a request the model API accepted may go without a byte of its answer before it counts as
 * unanswered (then the grace above runs, so a silent API stops the agent within 100 s). Claude Code's
 * calls stream: a long answer arrives as it is written, and while the model thinks, the API sends a
 * `ping` event every 15 to 30 s (as those who watch the stream report; the API promises pings, not
 * their rate), so 90 s of silence is three missed pings. Claude Code's own watchdog waits 180 to 300 s.
 */
export const SILENCE_MS = 90_000;

export interface CredentialProxyOptions {
  /** The model API's URL (default: Anthropic's). */
  upstream?: string;
  /** The upstream is the built-in scripted model (messages then name it so). */
  scripted?: boolean;
  /**
   * Hears, once, what stops the agent: at once a credential that cannot be used (a login that
   * expired, an upstream 401 or 403), and a model API unreachable for `graceMs` (a network that
   * dropped, or a request left unanswered for `silenceMs`). Claude Code itself would retry for
   * minutes before saying so, and then in words about this proxy ("check your inference gateway")
   * rather than about the user's network.
   */
  onStop?: (trouble: Trouble) => void;
  /** What fixes a credential the API refuses, in the host's words ("set ANTHROPIC_API_KEY to ..."). */
  fixCredential?: string;
  graceMs?: number;
  silenceMs?: number;
  /** The runner's log: requests refused here. */
  log?: (line: string) => void;
}

/** An error answer in the Messages API's shape, which Claude Code shows as it is. */
function answerError(res: ServerResponse, status: number, type: string, message: string): void {
  // An answer already under way cannot turn into an error: cut it, and the client sees it end short.
  if (res.headersSent) return void res.destroy();
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ type: "error", error: { type, message } }));
}

export async function startCredentialProxy(
  credential: Credential,
  options: CredentialProxyOptions = {},
): Promise<CredentialProxy> {
  const key = `sk-ant-agentrelay-${randomBytes(24).toString("hex")}`;
  const upstream = new URL(options.upstream ?? ANTHROPIC_API);
  const api: ModelApi = { url: options.upstream ?? ANTHROPIC_API, scripted: options.scripted ?? false };
  const graceMs = options.graceMs ?? UNREACHABLE_GRACE_MS;
  const silenceMs = options.silenceMs ?? SILENCE_MS;
  const log = options.log ?? (() => {});
  let stopped = false;
  const stop = (trouble: Trouble) => {
    if (stopped) return;
    stopped = true;
    options.onStop?.(trouble);
  };
  // Unreachable since the first failure with no answer after it; a blip shorter than the grace is ridden out.
  let unreachableTimer: NodeJS.Timeout | undefined;
  let lastCause: NetworkCause = { cause: "" };
  const reached = () => {
    clearTimeout(unreachableTimer);
    unreachableTimer = undefined;
  };
  const failed = (cause: NetworkCause) => {
    lastCause = cause;
    unreachableTimer ??= setTimeout(() => stop(modelApiUnreachable(api, lastCause)), graceMs);
  };
  const refusedCredential = (status: number, said?: string) =>
    stop({
      problem: `Claude Code could not authenticate: ${credentialRefused(api, status, said)}`,
      fix: options.fixCredential ?? "replace the credential",
    });

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const presented = req.headers["x-api-key"] ?? req.headers.authorization?.replace(/^Bearer /, "");
    if (presented !== key) return answerError(res, 401, "authentication_error", "unknown key");
    const call = modelApiCall(req.method, req.url);
    if (!call.ok) {
      log(`credential proxy: refused ${req.method} ${JSON.stringify(req.url?.slice(0, 200))}`);
      req.resume();
      return answerError(
        res,
        call.status,
        call.status === 400 ? "invalid_request_error" : "not_found_error",
        call.message,
      );
    }
    let auth: Record<string, string>;
    try {
      auth = authHeaders(credential, req.headers["anthropic-beta"]);
    } catch (error) {
      if (!(error instanceof CredentialError)) throw error;
      answerError(res, 401, "authentication_error", error.trouble.problem);
      return stop({
        ...error.trouble,
        problem: `Claude Code could not authenticate: ${error.trouble.problem}`,
      });
    }
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers))
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    Object.assign(headers, auth);
    const target = upstreamUrl(upstream, call);
    const send = target.protocol === "https:" ? httpsRequest : httpRequest;
    // Silence: no byte either way (the request's upload, the answer) for `silenceMs` is no answer.
    let silence: NodeJS.Timeout | undefined;
    // Ended here (silent, or the agent went away): the request's own error is no news then.
    let ended = false;
    const quiet = () => {
      clearTimeout(silence);
      silence = setTimeout(() => {
        ended = true;
        out.destroy();
        const cause = {
          cause: `it sent nothing for ${Math.round(silenceMs / 1000)} s after taking a request`,
        };
        failed(cause);
        answerError(res, 504, "api_error", modelApiUnreachable(api, cause).problem);
      }, silenceMs);
    };
    const out = send(target, { method: req.method, headers }, (answer) => {
      reached();
      quiet();
      answer.on("data", quiet);
      answer.on("end", () => clearTimeout(silence));
      answer.on("error", () => res.destroy());
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      if (answer.statusCode === 401 || answer.statusCode === 403) {
        let body = "";
        answer.setEncoding("utf8");
        answer.on("data", (chunk: string) => (body += chunk.slice(0, 4096)));
        answer.on("end", () => {
          let said: string | undefined;
          try {
            said = (JSON.parse(body) as { error?: { message?: string } }).error?.message;
          } catch {
            // not JSON: the status says enough
          }
          refusedCredential(answer.statusCode!, said);
          res.end(body);
        });
        return;
      }
      answer.pipe(res);
    });
    quiet();
    req.on("data", quiet);
    res.on("close", () => {
      clearTimeout(silence);
      if (res.writableFinished) return;
      ended = true;
      out.destroy();
    });
    out.on("error", (error) => {
      clearTimeout(silence);
      if (ended) return;
      const cause = networkCause(error, api.url);
      failed(cause);
      answerError(res, 502, "api_error", modelApiUnreachable(api, cause).problem);
    });
    req.pipe(out);
  });
  // A CONNECT (a tunnel to any host) is no call of the model API: refused, nothing forwarded.
  server.on("connect", (req: IncomingMessage, socket: Socket) => {
    log(`credential proxy: refused CONNECT ${JSON.stringify(req.url?.slice(0, 200))}`);
    const body = JSON.stringify({
      type: "error",
      error: { type: "invalid_request_error", message: "agentrelay's credential proxy: CONNECT is refused" },
    });
    socket.on("error", () => {});
    socket.end(
      `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
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

/**
 * The app's HTTP surface: the webhook endpoint (ingress.ts), the job endpoints the app function
 * registers (routes.ts), and `/ping`. One line is logged per request (method, path, status, time):
 * never a header or a body, so no token or payload reaches a log in any log format.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ApplicationFunction, Probot } from "probot";
import { webhookIngress } from "./ingress.ts";

type Handler = (req: IncomingMessage, res: ServerResponse) => boolean | void | Promise<boolean | void>;

export interface ServerOptions {
  webhookPath?: string;
  secret: string;
  previousSecrets?: string[];
  log?: (line: string) => void;
  /** How long a webhook's delivery waits for its handler before a 202 (ingress.ts). */
  answerWithinMs?: number;
}

export async function appRequestHandler(
  probot: Probot,
  app: ApplicationFunction,
  options: ServerOptions,
): Promise<(req: IncomingMessage, res: ServerResponse) => Promise<void>> {
  const log = options.log ?? ((line: string) => probot.log.info(line));
  const handlers: Handler[] = [
    webhookIngress(probot, {
      path: options.webhookPath ?? "/api/github/webhooks",
      secret: options.secret,
      ...(options.previousSecrets ? { previousSecrets: options.previousSecrets } : {}),
      ...(options.answerWithinMs ? { answerWithinMs: options.answerWithinMs } : {}),
      log,
    }),
  ];
  await probot.load(app, { cwd: process.cwd(), addHandler: (handler) => handlers.push(handler) });
  handlers.push((req, res) => {
    if ((req.url ?? "").split("?")[0] !== "/ping") return false;
    res.writeHead(200, { "content-type": "text/plain" }).end("PONG");
    return true;
  });
  return async (req, res) => {
    const started = Date.now();
    res.on("finish", () => {
      const path = (req.url ?? "").split("?")[0]!.slice(0, 200);
      log(`${req.method} ${path} ${res.statusCode} ${Date.now() - started}ms`);
    });
    try {
      for (const handler of handlers) if (await handler(req, res)) return;
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    } catch (error) {
      log(`${req.method} ${(req.url ?? "").split("?")[0]}: ${(error as Error).message}`);
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" }).end("internal error\n");
    }
  };
}

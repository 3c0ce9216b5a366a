/**
 * `npm start`. Without APP_ID and a private key it opens Probot's setup page, which registers the app
 * from app.yml and writes its credentials into .env. With them it serves the app (server.ts) on
 * PORT/HOST and reconciles every installation on start-up and then periodically
 * (AGENTRELAY_RECONCILE_MS, default 5 minutes).
 */
import { createServer } from "node:http";
import { createProbot, run } from "probot";
import { configFromEnv } from "../github/client.ts";
import { agentrelayApp, reconcileAll } from "./index.ts";
import { agentrelayOctokit } from "./octokit.ts";
import { appRequestHandler } from "./server.ts";

const env = process.env;
const config = configFromEnv(env);
const app = agentrelayApp({ config });

if (!env.APP_ID || !(env.PRIVATE_KEY || env.PRIVATE_KEY_PATH)) {
  await run(app, { Octokit: agentrelayOctokit() });
} else {
  const probot = createProbot({ overrides: { Octokit: agentrelayOctokit() } });
  const handler = await appRequestHandler(probot, app, {
    secret: env.WEBHOOK_SECRET || "development",
    // While rotating the webhook secret, deliveries signed with the previous one are still accepted.
    previousSecrets: (env.WEBHOOK_SECRET_PREVIOUS ?? "").split(",").filter(Boolean),
    ...(env.WEBHOOK_PATH ? { webhookPath: env.WEBHOOK_PATH } : {}),
  });
  const port = Number(env.PORT || 3000);
  const host = env.HOST || "localhost";
  createServer((req, res) => void handler(req, res)).listen(port, host, () =>
    probot.log.info(`agentrelay listening on http://${host}:${port}`),
  );
  const every = Number(env.AGENTRELAY_RECONCILE_MS ?? 5 * 60_000);
  const sweep = () =>
    reconcileAll(probot, config).catch((error: unknown) =>
      probot.log.error(`reconcile: ${(error as Error).message}`),
    );
  setTimeout(sweep, 5_000).unref();
  if (every > 0) setInterval(sweep, every).unref();
}

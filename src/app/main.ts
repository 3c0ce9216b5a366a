/**
 * `npm start`. Without APP_ID and a private key it opens Probot's setup page, which registers the app
 * from app.yml and writes its credentials into .env. With them it serves the app (server.ts) on
 * PORT/HOST and reconciles every installation on start-up and then periodically
 * (AGENTRELAY_RECONCILE_MS, default 5 minutes).
 *
 * GitHub must reach the webhook URL. AGENTRELAY_PUBLIC_URL is the app's public address (the setup page
 * registers its webhook path there); for development, WEBHOOK_PROXY_URL is a webhook proxy channel
 * (smee.io) whose deliveries are forwarded to this server.
 */
import { existsSync } from "node:fs";
import { createServer } from "node:http";
import { createProbot, run } from "probot";
import { SmeeClient } from "smee-client";
import { configFromEnv } from "../github/client.ts";
import { agentrelayApp, reconcileAll } from "./index.ts";
import { agentrelayOctokit } from "./octokit.ts";
import { appRequestHandler } from "./server.ts";

// The settings Probot's setup page wrote (and any the docs name) come from .env, as for `probot run`;
// variables already in the environment win.
if (existsSync(".env")) process.loadEnvFile(".env");
const env = process.env;
const config = configFromEnv(env);
const app = agentrelayApp({ config });

const webhookPath = env.WEBHOOK_PATH || "/api/github/webhooks";
// One line per request at info, as docs/github.md says (createProbot alone would default to warn).
env.LOG_LEVEL ||= "info";

if (!env.APP_ID || !(env.PRIVATE_KEY || env.PRIVATE_KEY_PATH)) {
  const publicHook = env.AGENTRELAY_PUBLIC_URL ? new URL(webhookPath, env.AGENTRELAY_PUBLIC_URL).href : null;
  // With a public address, no proxy channel is created (Probot would make one on smee.io)...
  if (publicHook) env.NO_SMEE_SETUP = "true";
  await run(app, { Octokit: agentrelayOctokit(), SmeeClient });
  // ...and the setup page registers the public address: Probot's manifest takes WEBHOOK_PROXY_URL
  // as the webhook URL when the page is shown (set only now, so that this process proxies nothing).
  if (publicHook && !env.WEBHOOK_PROXY_URL) env.WEBHOOK_PROXY_URL = publicHook;
} else {
  const probot = createProbot({ overrides: { Octokit: agentrelayOctokit() } });
  const handler = await appRequestHandler(probot, app, {
    secret: env.WEBHOOK_SECRET || "development",
    // While rotating the webhook secret, deliveries signed with the previous one are still accepted.
    previousSecrets: (env.WEBHOOK_SECRET_PREVIOUS ?? "").split(",").filter(Boolean),
    webhookPath,
  });
  const port = Number(env.PORT || 3000);
  const host = env.HOST || "localhost";
  createServer((req, res) => void handler(req, res)).listen(port, host, () => {
    probot.log.info(`agentrelay listening on http://${host}:${port}`);
    // Development: deliveries to the proxy channel are forwarded here (their signatures checked as any).
    if (env.WEBHOOK_PROXY_URL && !env.AGENTRELAY_PUBLIC_URL) {
      const target = `http://${host}:${port}${webhookPath}`;
      new SmeeClient({ source: env.WEBHOOK_PROXY_URL, target, logger: probot.log })
        .start()
        .catch(() =>
          probot.log.error(
            `cannot reach the webhook proxy ${env.WEBHOOK_PROXY_URL}; check WEBHOOK_PROXY_URL`,
          ),
        );
      probot.log.info(`forwarding webhooks from ${env.WEBHOOK_PROXY_URL} to ${target}`);
    }
  });
  const every = Number(env.AGENTRELAY_RECONCILE_MS ?? 5 * 60_000);
  const sweep = () =>
    reconcileAll(probot, config).catch((error: unknown) =>
      probot.log.error(`reconcile: ${(error as Error).message}`),
    );
  setTimeout(sweep, 5_000).unref();
  if (every > 0) setInterval(sweep, every).unref();
}

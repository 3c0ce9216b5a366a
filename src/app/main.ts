/**
 * `npm start`: runs the app with Probot's server. Without APP_ID and a private key it opens Probot's
 * setup page, which registers the app from app.yml. With them, it also reconciles every installation
 * on start-up and then periodically (AGENTRELAY_RECONCILE_MS, default 5 minutes).
 */
import { run } from "probot";
import { configFromEnv } from "../github/client.ts";
import { agentrelayApp, reconcileAll } from "./index.ts";
import { agentrelayOctokit } from "./octokit.ts";

const config = configFromEnv(process.env);
const every = Number(process.env.AGENTRELAY_RECONCILE_MS ?? 5 * 60_000);
const app = agentrelayApp({ config });

await run(
  async (probot, options) => {
    await app(probot, options);
    const sweep = () =>
      reconcileAll(probot, config).catch((error: unknown) => probot.log.error(error as Error, "reconcile"));
    setTimeout(sweep, 5_000).unref();
    if (every > 0) setInterval(sweep, every).unref();
  },
  { Octokit: agentrelayOctokit() },
);

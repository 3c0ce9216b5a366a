/**
 * The agentrelay GitHub App (Probot): one handler per event family, the job endpoints and the
 * reconciler. It keeps nothing in memory between events: every handler reads the run from GitHub.
 */
import { RunStateDamageError, sayStateDamage } from "../github/damage.ts";
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { ApplicationFunction, Probot } from "probot";
import { type AppConfig, configFromEnv } from "../github/client.ts";
import { oidcVerifier, type ActionsIdentity } from "../github/oidc.ts";
import { StateCache } from "../github/state-cache.ts";
import { type Repository, repoContextOf } from "./context.ts";
import { EVENT_HANDLERS, handlerOf, type HandledEvent } from "./events.ts";
import { WriteBudgetSpent } from "../github/write-pacing.ts";
import { DeliveryOutcome } from "./ingress.ts";
import { sweepRepository } from "./waiting.ts";
import { jobRoutes } from "./routes.ts";

export interface AgentrelayAppOptions {
  config?: AppConfig;
  /** Verifies jobs' OIDC tokens (default: against GitHub's key set). */
  verify?: (token: string) => Promise<ActionsIdentity>;
  /** What attempts' report keys derive from (default: the app's private key, see reportSecretOf). */
  reportSecret?: string;
}

/**
 * The secret attempts' report keys derive from: a hash of the app's private key, which every replica
 * holds and which never leaves the app; without one (a test, a first start), a secret of this process.
 */
export function reportSecretOf(env: NodeJS.ProcessEnv): string {
  const key = env.PRIVATE_KEY || (env.PRIVATE_KEY_PATH ? readFileSync(env.PRIVATE_KEY_PATH, "utf8") : "");
  return key
    ? createHash("sha256").update(`agentrelay report keys\n${key}`).digest("hex")
    : randomBytes(32).toString("hex");
}

export function agentrelayApp(options: AgentrelayAppOptions = {}): ApplicationFunction {
  // Each app instance (a replica) remembers the state versions it saw; replicas share nothing else.
  const config = { ...(options.config ?? configFromEnv(process.env)), stateCache: new StateCache() };
  const verify =
    options.verify ??
    oidcVerifier({
      audience: config.oidcAudience,
      ...(config.oidcIssuer ? { issuer: config.oidcIssuer } : {}),
    });
  const reportSecret = options.reportSecret ?? reportSecretOf(process.env);
  return async (app: Probot, { addHandler }) => {
    let login: Promise<string> | null = null;
    // The app's own bot login, to tell its own actions from people's.
    const appLogin = () =>
      (login ??= app
        .auth()
        .then(async (octokit) => `${(await octokit.rest.apps.getAuthenticated()).data?.slug}[bot]`)
        .catch((error: unknown) => {
          login = null;
          throw error;
        }));

    app.on(Object.keys(EVENT_HANDLERS) as HandledEvent[], (context) => {
      const { repository } = context.payload as unknown as { repository: Repository };
      const ctx = repoContextOf(context.octokit, repository, config, (message) => context.log.info(message));
      return handlerOf(context.name, context.payload)!(ctx, context.payload as never, appLogin).catch(
        async (error: unknown) => {
          // A damaged run would fail every event the same way: said once, and the delivery is done.
          if (error instanceof RunStateDamageError) {
            await sayStateDamage(ctx, error);
            throw new DeliveryOutcome(200, `run ${error.damaged.run} cannot be read: ${error.message}`);
          }
          if (error instanceof WriteBudgetSpent)
            throw new DeliveryOutcome(
              503,
              `${error.message} (the reconciler carries this ${context.name} event out then)`,
            );
          throw error;
        },
      );
    });
    addHandler(jobRoutes(app, { config, verify, reportSecret }));
  };
}

/** Reconciles every repository of every installation (on start-up and periodically). */
export async function reconcileAll(app: Probot, config: AppConfig): Promise<void> {
  const appClient = await app.auth();
  let login: Promise<string> | null = null;
  // Whose comments are the app's own answers (its bot's), asked once per sweep.
  const ownLogin = () =>
    (login ??= appClient.rest.apps.getAuthenticated().then(({ data }) => `${data?.slug}[bot]`));
  const installations = await appClient.paginate(appClient.rest.apps.listInstallations, { per_page: 100 });
  for (const installation of installations) {
    const octokit = await app.auth(installation.id);
    const repos = await octokit.paginate(octokit.rest.apps.listReposAccessibleToInstallation, {
      per_page: 100,
    });
    for (const repository of repos) {
      const ctx = repoContextOf(octokit, repository, config, (message) => app.log.info(message));
      await sweepRepository(ctx, ownLogin).catch((error: unknown) =>
        app.log.error(error as Error, `reconcile ${repository.full_name}`),
      );
    }
  }
}

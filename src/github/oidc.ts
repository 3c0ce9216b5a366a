/**
 * Verifies the GitHub Actions OIDC token a job presents to the app: signature against GitHub's key
 * set, issuer, audience, expiry, and the claims that tie the job to one repository and to the task
 * workflow on the default branch started by workflow_dispatch.
 */
import { createRemoteJWKSet, type JWTPayload, jwtVerify } from "jose";

export const ACTIONS_ISSUER = "https://token.actions.githubusercontent.com";

export interface OidcOptions {
  issuer?: string;
  audience: string;
}

/** Who the job is, as GitHub vouches for it. */
export interface ActionsIdentity {
  repository: string;
  runId: string;
  workflowRef: string;
  eventName: string;
}

export class OidcError extends Error {
  override name = "OidcError";
}

interface ActionsClaims extends JWTPayload {
  repository?: string;
  run_id?: string;
  workflow_ref?: string;
  job_workflow_ref?: string;
  event_name?: string;
}

export function oidcVerifier(options: OidcOptions): (token: string) => Promise<ActionsIdentity> {
  const issuer = (options.issuer ?? ACTIONS_ISSUER).replace(/\/$/, "");
  // jose caches the key set and refetches it when a token names a key it has not seen (key rotation).
  const keys = createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks`));
  return async (token) => {
    let claims: ActionsClaims;
    try {
      ({ payload: claims } = await jwtVerify<ActionsClaims>(token, keys, {
        issuer,
        audience: options.audience,
        algorithms: ["RS256"],
      }));
    } catch (error) {
      throw new OidcError(`the OIDC token was refused: ${(error as Error).message}`);
    }
    const { repository, run_id: runId, event_name: eventName } = claims;
    const workflowRef = claims.job_workflow_ref ?? claims.workflow_ref;
    if (!repository || !runId || !workflowRef || !eventName) {
      throw new OidcError("the OIDC token lacks the repository, run_id, workflow_ref or event_name claim");
    }
    return { repository, runId, workflowRef, eventName };
  };
}

/** The workflow reference a genuine task job has: the installed task workflow, on the default branch. */
export function expectedWorkflowRef(repository: string, workflowFile: string, defaultBranch: string): string {
  return `${repository}/.github/workflows/${workflowFile}@refs/heads/${defaultBranch}`;
}

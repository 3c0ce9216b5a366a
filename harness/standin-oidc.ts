/**
 * The stand-in's Actions OIDC provider: the tokens its task jobs present to the app, signed with a key
 * of its own and published at its issuer's key set, with the claims GitHub gives a task job. The
 * `repository` claim is the repository the job's workflow runs in (a workstream's repository for a
 * graph that spans repositories), as GitHub sets it
 * (https://docs.github.com/en/actions/security-for-github-actions/security-hardening-your-deployments/about-security-hardening-with-openid-connect#understanding-the-oidc-token).
 */
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { DEFAULT_CONFIG } from "../src/github/client.ts";
import type { Reply } from "./fake-reply.ts";

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

/**
 * The issuer's signing key, made once a process (an RSA key takes a CPU-second and more on a busy
 * machine); each stand-in's issuer still has its own address, which the app's verifier trusts alone.
 */
let signing: Promise<{ key: KeyPair["privateKey"]; jwks: object }> | undefined;
const signingKey = () =>
  (signing ??= generateKeyPair("RS256").then(async ({ publicKey, privateKey }) => ({
    key: privateKey,
    jwks: { keys: [{ ...(await exportJWK(publicKey)), kid: "e2e", alg: "RS256", use: "sig" }] },
  })));

export class JobIdentity {
  private signingKey!: KeyPair["privateKey"];
  private jwks!: object;

  async start(): Promise<void> {
    ({ key: this.signingKey, jwks: this.jwks } = await signingKey());
  }

  /**
   * `/oidc/token?job=RUN_ID&audience=A[&repository=OWNER/NAME]` (the job's token request) and the
   * issuer's key set; null for any other path.
   */
  async serve(url: URL, origin: string): Promise<Reply | null> {
    if (url.pathname === "/oidc-issuer/.well-known/jwks") return [200, this.jwks];
    if (url.pathname !== "/oidc/token") return null;
    const repository = url.searchParams.get("repository") ?? "octo/demo";
    const value = await new SignJWT({
      repository,
      run_id: url.searchParams.get("job")!,
      event_name: "workflow_dispatch",
      job_workflow_ref: `${repository}/.github/workflows/${DEFAULT_CONFIG.taskWorkflow}@refs/heads/main`,
    })
      .setProtectedHeader({ alg: "RS256", kid: "e2e" })
      .setIssuer(`${origin}/oidc-issuer`)
      .setAudience(url.searchParams.get("audience") ?? "")
      .setIssuedAt()
      .setExpirationTime("10m")
      .sign(this.signingKey);
    return [200, { value }];
  }
}

/**
 * What the runner hands an attempt process (attempt-process.ts): its specification, and its secrets
 * apart from its environment. The runner's side only: `agentrelay run` and `status` load this, and
 * not the attempt itself (its proxies, its secret scan), which only the attempt process needs.
 */
import { CREDENTIAL_VARIABLES } from "./credential.ts";
import { isSecretName } from "./redact.ts";
import type { AttemptInputs } from "./attempt.ts";

export interface AttemptSpec extends AttemptInputs {
  graphFile: string;
  task: string;
  /** Where the result is written, as JSON. */
  resultFile: string;
  /** Where the attempt records the process groups it starts (so that a crashed runner's are stopped). */
  processGroupsFile?: string;
}

/**
 * An attempt process's environment without its secrets (credentials, tokens by name), and those
 * secrets, with `secrets` added, to hand it on its stdin.
 */
export function secretsApart(
  env: NodeJS.ProcessEnv,
  secrets: NodeJS.ProcessEnv,
): { env: NodeJS.ProcessEnv; piped: Record<string, string> } {
  const secret = (name: string) =>
    isSecretName(name) || (CREDENTIAL_VARIABLES as readonly string[]).includes(name);
  const piped: Record<string, string> = {};
  const rest: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries({ ...env, ...secrets })) {
    if (value === undefined) continue;
    if (secret(name) || name in secrets) piped[name] = value;
    else rest[name] = value;
  }
  return { env: rest, piped };
}

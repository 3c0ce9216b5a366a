/**
 * Token tiers made real: each attempt gets an installation token scoped to its one repository and to
 * its tier's permissions, expiring within the hour (GitHub's limit). No tier may ever hold the
 * permissions that would let an agent rewrite workflows, administer the repository or read secrets.
 */
import type { TokenTier } from "../graph/schema.ts";

export type Permissions = Record<string, "read" | "write">;

export const TIER_PERMISSIONS: Record<TokenTier, Permissions> = {
  // Reads the code and its PRs; cannot push (its work leaves through the report, not a branch).
  read_only: { contents: "read", pull_requests: "read", metadata: "read" },
  // Pushes its task branch (rulesets fence the rest) and may read or comment on PRs.
  standard: { contents: "write", pull_requests: "write", metadata: "read" },
  // Standard plus issues and read access to checks and Actions, for tasks that triage or inspect CI.
  elevated: {
    contents: "write",
    pull_requests: "write",
    metadata: "read",
    issues: "write",
    checks: "read",
    actions: "read",
  },
};

/** Permissions no attempt token may hold, whatever a graph says. */
export const FORBIDDEN_PERMISSIONS = ["workflows", "administration", "secrets", "members"] as const;

export function tierPermissions(tier: TokenTier): Permissions {
  const permissions = TIER_PERMISSIONS[tier];
  for (const name of FORBIDDEN_PERMISSIONS) {
    if (name in permissions) throw new Error(`token tier '${tier}' may not hold '${name}'`);
  }
  if (permissions.actions === "write") throw new Error(`token tier '${tier}' may not hold 'actions: write'`);
  return { ...permissions };
}

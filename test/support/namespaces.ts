/**
 * Whether this machine gives an attempt a network namespace (Linux, `unshare`, `ip`, `nft`): the
 * egress tests need one. CI sets AGENTRELAY_REQUIRE_NETNS, so there they fail instead of skipping.
 */
import { spawnSync } from "node:child_process";

export function namespacesHere(): boolean {
  if (process.env.AGENTRELAY_REQUIRE_NETNS) return true;
  if (process.platform !== "linux") return false;
  const user = process.geteuid?.() === 0 ? [] : ["--user", "--map-root-user"];
  const probe = spawnSync("unshare", [
    ...user,
    "--net",
    "--",
    "sh",
    "-c",
    "ip link set lo up && nft list tables",
  ]);
  return probe.status === 0;
}

/** Why the egress tests cannot run here, or null when they can (a note for describeNeeding). */
export const NO_NETNS = namespacesHere()
  ? null
  : "no network namespace here: needs Linux with unshare, iproute2's ip and nftables' nft (the Debian packages)";

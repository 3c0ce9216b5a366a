/**
 * The egress filter the Action sets in its job container: the same rules (rules.ts) applied by the same
 * code (egress.ts), limited to the agent's group. A namespace made for the test stands in for the
 * container's (loopback up, a default route like the container's eth0), so that the machine's own
 * network is never touched; the test inspects the rules and what the agent could and could not reach.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { expect, it } from "vitest";
import { AGENT_GID } from "../../src/attempt/agent-user.ts";
import { REPO_ROOT } from "../support/fixtures.ts";
import { NO_NETNS } from "../support/namespaces.ts";
import { describeNeeding } from "../support/skips.ts";
import { WAIT_MS } from "../../harness/patience.ts";

const CONTAINER = [
  "ip link set lo up",
  "ip link add eth0 type veth peer name eth0-peer",
  "ip addr add 192.0.2.2/32 dev eth0",
  "ip link set eth0 up",
  "ip link set eth0-peer up",
  "ip route add default dev eth0",
].join(" && ");

describeNeeding(NO_NETNS, "the Action's egress filter in its job container", () => {
  it("filters the agent's group only, refuses what is off the list, and the agent cannot change it", () => {
    const script = join(REPO_ROOT, "test/support/container-egress.ts");
    const run = spawnSync(
      "unshare",
      ["--net", "--", "sh", "-c", `${CONTAINER} && exec "${process.execPath}" --import tsx "${script}"`],
      { cwd: REPO_ROOT, encoding: "utf8", timeout: WAIT_MS },
    );
    expect(run.status, run.stderr).toBe(0);
    const seen = JSON.parse(run.stdout) as {
      enforced: boolean;
      note: string | null;
      prefix: string[];
      rules: string;
      outputs: Record<string, string>;
      refusals: { kind: string; host: string; count: number }[];
      after: string;
    };
    expect(seen).toMatchObject({ enforced: true, note: null });
    // The agent runs as a user of its own, in the group the rules filter, with no privilege.
    expect(seen.prefix[0]).toMatch(/\/setpriv$/);
    expect(seen.prefix.slice(1, 4)).toEqual([
      expect.stringMatching(/^--reuid=6\d{4}$/),
      `--regid=${AGENT_GID}`,
      "--clear-groups",
    ]);
    expect(seen.prefix).toEqual(expect.arrayContaining(["--bounding-set=-all", "--no-new-privs"]));
    // The rules as nft lists them: the runner's sockets pass, the agent's DNS goes to the stub, its
    // other traffic may reach only the proxy on loopback and is otherwise recorded and refused.
    const rules = seen.rules.replace(/\s+/g, " ");
    expect(rules).toMatch(new RegExp(`meta skgid ${AGENT_GID} udp dport 53 redirect to :\\d+`));
    expect(rules).toMatch(new RegExp(`meta skgid ${AGENT_GID} tcp dport 53 redirect to :\\d+`));
    expect(rules).toMatch(
      new RegExp(`meta skgid != ${AGENT_GID} accept ct state established,related accept`),
    );
    expect(rules).toMatch(
      /ip daddr 127\.0\.0\.1 tcp dport \{ \d+, \d+ \} accept ip daddr 127\.0\.0\.1 udp dport \d+ accept/,
    );
    expect(rules).toContain("update @refused_v4 { ip daddr . th dport }");
    expect(rules).toContain("meta l4proto tcp reject with tcp reset reject with icmpx admin-prohibited");
    const o = seen.outputs;
    expect(o.curl).toMatch(/403[\s\S]*curl-exit=56/);
    expect(o.lookup).toContain("lookup-exit=2");
    expect(o.socket).toMatch(/Connection refused[\s\S]*socket-exit=1/);
    expect(o.registry).toContain("registry: left-pad 1.3.0");
    // Even an allowed host is reached only through the proxy.
    expect(o.direct).not.toContain("direct-exit=0");
    // nft's complaint (stderr) and the echo (stdout) may arrive in either order.
    expect(o.flush).toContain("Operation not permitted");
    expect(o.flush).toMatch(new RegExp(`flush-exit=1\\n${AGENT_GID}`));
    // cat's complaint (stderr) and the echo (stdout) may arrive in either order too (seen on a loaded machine).
    expect(o.environ).toContain("Permission denied");
    expect(o.environ).toContain("environ-exit=1");
    // The runner itself is not filtered.
    expect(o.runner).toContain("registry: left-pad 1.3.0");
    expect(seen.refusals).toEqual(
      expect.arrayContaining([
        { kind: "request", host: "exfil.example:443", count: 1 },
        expect.objectContaining({ kind: "lookup", host: "exfil.example" }),
        { kind: "connection", host: "203.0.113.9:443", count: 1 },
      ]),
    );
    // The runner takes the rules away when the attempt ends.
    expect(seen.after).not.toContain("agentrelay_egress");
  });
});

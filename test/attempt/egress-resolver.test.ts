/**
 * How the egress proxy resolves an allowed name: with the resolver's configuration as the runner read
 * it before any agent existed, so an agent that rewrites /etc/hosts or /etc/resolv.conf steers
 * nothing; and never to this machine or its link (the runner's loopback services, cloud metadata).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { internalAddress, resolveName, snapshotResolver } from "../../src/attempt/egress/resolver.ts";
import { REPO_ROOT } from "../support/fixtures.ts";
import { NO_NETNS } from "../support/namespaces.ts";
import { describeNeeding } from "../support/skips.ts";
import { WAIT_MS } from "../../harness/patience.ts";

describe("the resolver's snapshot", () => {
  it("reads the hosts entries and name servers once; later changes to the files change nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentrelay-resolver-"));
    const files = { hosts: join(dir, "hosts"), resolvConf: join(dir, "resolv.conf") };
    writeFileSync(
      files.hosts,
      "# the machine's\n127.0.0.1 localhost\n10.1.2.3 Registry.Internal registry # the mirror\nnot-an-address x\n",
    );
    writeFileSync(
      files.resolvConf,
      "search example.com\nnameserver 10.0.0.53\n; old\nnameserver ::1\nnameserver bogus\n",
    );
    const snapshot = snapshotResolver(files);
    writeFileSync(files.hosts, "127.0.0.1 registry.internal\n");
    writeFileSync(files.resolvConf, "nameserver 127.0.0.2\n");
    expect(snapshot).toEqual({
      servers: ["10.0.0.53", "::1"],
      hosts: [
        ["localhost", ["127.0.0.1"]],
        ["registry.internal", ["10.1.2.3"]],
        ["registry", ["10.1.2.3"]],
      ],
    });
    expect(await resolveName(snapshot, "registry.internal.")).toEqual([{ address: "10.1.2.3", family: 4 }]);
    expect(await resolveName(snapshot, "[::1]")).toEqual([{ address: "::1", family: 6 }]);
    expect(snapshotResolver({ hosts: join(dir, "none"), resolvConf: join(dir, "none") })).toEqual({
      servers: ["127.0.0.1"],
      hosts: [],
    });
  });

  it("knows the addresses no allowed name may lead to", () => {
    expect(internalAddress("127.0.0.1")).toBe("loopback: this machine");
    expect(internalAddress("127.8.9.10")).toBe("loopback: this machine");
    expect(internalAddress("::ffff:127.0.0.1")).toBe("loopback: this machine");
    expect(internalAddress("::1")).toBe("loopback: this machine");
    expect(internalAddress("0.0.0.0")).toBe("unspecified: this machine");
    expect(internalAddress("169.254.169.254")).toBe("link-local, where cloud metadata answers");
    expect(internalAddress("fe80::1")).toBe("link-local");
    expect(internalAddress("fd00:ec2::254")).toBe("cloud metadata");
    for (const outside of ["10.0.0.7", "192.0.2.10", "140.82.112.3", "2606:4700::1111", "fd12::1"])
      expect(internalAddress(outside)).toBeNull();
  });
});

describeNeeding(NO_NETNS, "an agent that rewrites /etc/hosts and /etc/resolv.conf", () => {
  it("steers nothing: the proxy connects where the runner's resolver says, and never to this machine", () => {
    const user = process.geteuid?.() === 0 ? [] : ["--user", "--map-root-user"];
    // A namespace of its own: its own mounts (the files are bind-mounted there), its own network.
    const network = "ip link set lo up && ip addr add 192.0.2.10/32 dev lo";
    const script = join(REPO_ROOT, "test/support/hosts-steering.ts");
    const run = spawnSync(
      "unshare",
      [
        ...user,
        "--mount",
        "--net",
        "--",
        "sh",
        "-c",
        `${network} && exec "${process.execPath}" --import tsx "${script}"`,
      ],
      { cwd: REPO_ROOT, encoding: "utf8", timeout: WAIT_MS },
    );
    expect(run.status, run.stderr).toBe(0);
    const seen = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(seen).toMatchObject({ forwarded: "200 target", tunnelled: "target" });
    expect(seen.metadata).toMatch(
      /^403 agentrelay: metadata\.allowed\.example is on the allowlist, but it resolves to 169\.254\.169\.254/,
    );
    expect(seen.loopback).toMatch(
      /^403 agentrelay: loop\.allowed\.example is on the allowlist, but it resolves to 127\.0\.0\.1, loopback: this machine/,
    );
    expect(seen.refused).toEqual([
      expect.stringMatching(
        /^metadata\.allowed\.example:\d+ \(it resolves to 169\.254\.169\.254, link-local/,
      ),
      expect.stringMatching(/^loop\.allowed\.example:\d+ \(it resolves to 127\.0\.0\.1, loopback/),
    ]);
  });
});

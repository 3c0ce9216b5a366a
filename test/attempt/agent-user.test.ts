/**
 * The agent's own user (needs root and setpriv, as in a job container): it cannot reach what is
 * root's (a program the runner runs, the runner's environment, a root-owned unix socket such as the
 * Docker socket a job container is given), and every process of it ends when asked, a `setsid`
 * daemon included, without a PID namespace; another user's processes are left alone.
 */
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  AGENT_GID,
  type AgentUser,
  agentUserPossible,
  agentUserProblem,
  claimAgentUser,
  processesOf,
} from "../../src/attempt/agent-user.ts";
import { REPO_ROOT } from "../support/fixtures.ts";

const users: AgentUser[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const user of users.splice(0)) await user.release();
  for (const server of servers.splice(0)) server.close();
});

const claim = async () => {
  const user = await claimAgentUser(tmpdir());
  users.push(user);
  return user;
};

/** Runs a shell command as the agent runs: as its user, with its prefix. */
const as = (user: AgentUser, command: string) =>
  spawnSync(user.prefix[0]!, [...user.prefix.slice(1), "sh", "-c", command], { encoding: "utf8" });

/** The same, without blocking this process (which serves the socket the command connects to). */
const asAsync = (user: AgentUser, command: string) =>
  new Promise<string>((resolve) => {
    const child = spawn(user.prefix[0]!, [...user.prefix.slice(1), "sh", "-c", command]);
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.on("close", () => resolve(out));
  });

/** A directory others may enter, as a runner's temp is. */
const openDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "agentrelay-agent-user-"));
  chmodSync(dir, 0o755);
  return dir;
};

describe.skipIf(!agentUserPossible())("the agent's own user (needs root and setpriv)", () => {
  it("is no one else: not root, no group but the agents', no capability, no new privileges", async () => {
    const user = await claim();
    const status = as(user, "cat /proc/self/status").stdout;
    expect(status).toMatch(
      new RegExp(`^Uid:\\s+${user.uid}\\s+${user.uid}\\s+${user.uid}\\s+${user.uid}$`, "m"),
    );
    expect(status).toMatch(
      new RegExp(`^Gid:\\s+${AGENT_GID}\\s+${AGENT_GID}\\s+${AGENT_GID}\\s+${AGENT_GID}$`, "m"),
    );
    expect(status).toMatch(/^Groups:\s*$/m);
    for (const set of ["CapPrm", "CapEff", "CapBnd", "CapAmb", "CapInh"])
      expect(status).toMatch(new RegExp(`^${set}:\\s+0{16}$`, "m"));
    expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
    // Two attempts on one machine get two users.
    expect((await claim()).uid).not.toBe(user.uid);
  });

  it("is one attempt's alone, when several runners claim theirs at the same moment", async () => {
    const claimer = `import("${join(REPO_ROOT, "src/attempt/agent-user.ts")}").then(async (m) => {
      const user = await m.claimAgentUser(${JSON.stringify(tmpdir())});
      console.log(user.uid);
      setTimeout(() => user.release(), 1500);
    });`;
    const uids = await Promise.all(
      [1, 2, 3].map(
        () =>
          new Promise<string>((resolve) => {
            const child = spawn(process.execPath, ["--import", "tsx", "-e", claimer], { cwd: REPO_ROOT });
            let out = "";
            child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
            child.on("close", () => resolve(out.trim()));
          }),
      ),
    );
    expect(uids.every((uid) => /^6\d{4}$/.test(uid))).toBe(true);
    expect(new Set(uids).size).toBe(3);
  });

  it("cannot rewrite a root-owned program, read the runner's environment, or use a root-owned unix socket", async () => {
    const user = await claim();
    const dir = openDir();
    const program = join(dir, "git");
    writeFileSync(program, "#!/bin/sh\necho the runner git\n", { mode: 0o755 });
    const replace = as(
      user,
      `echo 'echo planted' > ${program}; mv ${dir}/x ${program} 2>&1; rm -f ${program}`,
    );
    expect(replace.stderr).toContain("Permission denied");
    expect(spawnSync(program, { encoding: "utf8" }).stdout).toBe("the runner git\n");

    const environ = as(user, `cat /proc/${process.pid}/environ`);
    expect(environ.status).not.toBe(0);
    expect(environ.stderr).toContain("Permission denied");

    // A unix socket as the Docker socket is in a job container: root's, for root and a group only.
    const socket = join(dir, "docker.sock");
    const server = createServer((connection) => connection.end("answered\n"));
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    const connect = () =>
      asAsync(
        user,
        `${process.execPath} -e 'require("net").connect(${JSON.stringify(socket)}).on("data", (d) => process.stdout.write(d)).on("error", (e) => { console.log(e.code); })'`,
      );
    for (const mode of [0o660, 0o600]) {
      chmodSync(socket, mode);
      expect(await connect(), mode.toString(8)).toBe("EACCES\n");
    }
    // The same connection, once the socket is open to everyone: the refusal above is the permission's.
    chmodSync(socket, 0o666);
    expect(await connect()).toBe("answered\n");
  });

  it("ends every process of the user, a setsid daemon included, without a PID namespace, and no one else's", async () => {
    const user = await claim();
    const dir = openDir();
    const marker = join(dir, "rewritten");
    // A daemon that leaves its session and would rewrite a file the runner writes next.
    const start = as(
      user,
      `setsid sh -c 'sleep 1; echo forged > ${marker}' </dev/null >/dev/null 2>&1 & (sh -c "sleep 300 &" </dev/null >/dev/null 2>&1 &); echo started`,
    );
    expect(start.stdout).toContain("started");
    const other = spawn("sleep", ["300"], { stdio: "ignore" });
    expect(processesOf(user.uid).length).toBeGreaterThanOrEqual(2);
    await user.endAll();
    expect(processesOf(user.uid)).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    expect(spawnSync("test", ["-e", marker]).status).not.toBe(0);
    // Another user's process (here root's) was not touched.
    expect(other.exitCode).toBeNull();
    other.kill();
  });

  it("is given its checkout, links in it included, but never what a link points to", async () => {
    const user = await claim();
    const dir = openDir();
    const program = join(dir, "git");
    writeFileSync(program, "#!/bin/sh\n", { mode: 0o755 });
    const checkout = join(dir, "checkout");
    mkdirSync(join(checkout, "src"), { recursive: true });
    writeFileSync(join(checkout, "src", "a.txt"), "a\n");
    // A link a task committed (or an agent left) to a program the runner runs.
    symlinkSync(program, join(checkout, "src", "tool"));
    user.give(checkout);
    for (const path of [
      checkout,
      join(checkout, "src"),
      join(checkout, "src", "a.txt"),
      join(checkout, "src", "tool"),
    ])
      expect(lstatSync(path).uid, path).toBe(user.uid);
    expect(lstatSync(program).uid).toBe(0);
    expect(as(user, `echo planted > ${join(checkout, "src", "tool")}`).stderr).toContain("Permission denied");
  });

  it("is refused where the runner would run a program its user can change, or cannot reach its directories", async () => {
    const user = await claim();
    const dir = openDir();
    const where = { repoDir: dir, workDir: dir };
    expect(agentUserProblem(user, where)).toBeNull();
    const closed = mkdtempSync(join(tmpdir(), "agentrelay-closed-"));
    expect(agentUserProblem(user, { repoDir: join(closed), workDir: dir })).toBe(
      `the agent's user (uid ${user.uid}) cannot reach ${closed}: ${closed} is closed to others; make it searchable (chmod o+x)`,
    );
  });
});

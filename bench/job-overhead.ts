/**
 * bench/job-overhead: how long the bundled Action takes from its start (node launched, as a runner
 * launches it) to spawning Claude Code, with the agent preinstalled: token exchange, reading the
 * pinned state, cloning the task branch from a local remote, restoring agent configuration and
 * writing the protocol files. The app, GitHub's API and the OIDC endpoint answer on loopback; the
 * "agent" is a script that notes when it started. Target: under 1 s. Also prints the bundle size.
 */
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createEngine } from "../src/engine/engine.ts";
import { parseGraph } from "../src/graph/load.ts";
import { newMeta } from "../src/github/hosted-run.ts";
import { table } from "./table.ts";

const GRAPH = "name: g\ntasks:\n  - id: greet\n    description: Create greet.txt.\n";

async function once(root: string, dist: string): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "agentrelay-overhead-"));
  const bare = join(dir, "remote", "octo", "demo.git");
  mkdirSync(bare, { recursive: true });
  const sh = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, stdio: "ignore" });
  sh(bare, "init", "-q", "--bare", "-b", "main");
  const seed = join(dir, "seed");
  mkdirSync(seed);
  sh(seed, "init", "-q", "-b", "main");
  writeFileSync(join(seed, "README.md"), "demo\n");
  sh(seed, "add", ".");
  sh(seed, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "-m", "init");
  sh(seed, "push", "-q", bare, "main", "main:agentrelay/g/default/integration");
  const engine = createEngine(parseGraph(".workflow/g.yaml", GRAPH), { runNumber: 1 });
  const state = JSON.stringify({
    ...engine.start(0).state,
    source: { path: ".workflow/g.yaml", commit: "c".repeat(40), branch: "main", text: GRAPH },
    github: newMeta(),
  });
  const server = createServer((req, res) => {
    const url = req.url ?? "";
    if (url.startsWith("/oidc")) return res.end(JSON.stringify({ value: "eyJhbGciOiJSUzI1NiJ9.e30.c2ln" }));
    if (url.startsWith("/agentrelay/token"))
      return res.end(
        JSON.stringify({ token: `ghs_${"a".repeat(36)}`, tier: "standard", expires_at: "2099" }),
      );
    if (url.startsWith("/agentrelay/report")) return res.end("{}");
    // The run's files at the dispatched commit (GraphQL), here in the one-document format.
    if (url.startsWith("/graphql")) {
      const files = { dir: null, legacy: { object: { text: state } } };
      res.setHeader("content-type", "application/json");
      return res.end(JSON.stringify({ data: { repository: { object: files } } }));
    }
    res.writeHead(404).end("{}");
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const mark = join(dir, "spawned");
  const claude = join(dir, "claude");
  writeFileSync(
    claude,
    `#!/bin/sh\nnode -e 'require("fs").writeFileSync(process.argv[1], String(Date.now()))' "${mark}"\nexit 1\n`,
  );
  chmodSync(claude, 0o755);
  const output = join(dir, "out");
  writeFileSync(output, "");
  const env = {
    PATH: process.env.PATH!,
    HOME: dir,
    GITHUB_EVENT_NAME: "workflow_dispatch",
    GITHUB_REPOSITORY: "octo/demo",
    GITHUB_SERVER_URL: `file://${join(dir, "remote")}`,
    GITHUB_API_URL: base,
    GITHUB_WORKSPACE: join(dir, "ws"),
    RUNNER_TEMP: join(dir, "tmp"),
    GITHUB_OUTPUT: output,
    GITHUB_STEP_SUMMARY: output,
    ACTIONS_ID_TOKEN_REQUEST_URL: `${base}/oidc?x=1`,
    ACTIONS_ID_TOKEN_REQUEST_TOKEN: "t",
    INPUT_RUN: "g/1",
    INPUT_TASK: "greet",
    INPUT_ATTEMPT: "1",
    "INPUT_STATE-VERSION": "v1",
    "INPUT_APP-URL": base,
    "INPUT_CLAUDE-PATH": claude,
    AGENTRELAY_ANTHROPIC_CREDENTIAL: "sk-ant-bench",
    // The job shares this machine's network namespace: its egress rules are for a job container's own.
    AGENTRELAY_EGRESS: "off",
  };
  const started = Date.now();
  await new Promise<void>((done) =>
    spawn(process.execPath, [dist], { env, stdio: "ignore", cwd: root }).on("close", () => done()),
  );
  server.close();
  return Number(readFileSync(mark, "utf8")) - started;
}

export async function jobOverheadBench(): Promise<string> {
  const root = resolve(".");
  const dist = join(root, "dist/action/index.js");
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) samples.push(await once(root, dist));
  samples.sort((a, b) => a - b);
  const size = (file: string) => `${(statSync(join(root, "dist/action", file)).size / 1024).toFixed(0)} KiB`;
  return table(
    ["measure", "value"],
    [
      ["start to Claude spawn, median of 5", `${samples[2]} ms`],
      ["start to Claude spawn, slowest", `${samples[4]} ms`],
      ["dist/action/index.js", size("index.js")],
      ["dist/action/minijinja_js_bg.wasm", size("minijinja_js_bg.wasm")],
    ],
  );
}

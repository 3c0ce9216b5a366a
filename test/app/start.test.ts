import { spawn } from "node:child_process";
import { createHmac, generateKeyPairSync } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { until } from "../../harness/patience.ts";
import { REPO_ROOT } from "../support/fixtures.ts";

describe("npm start", () => {
  it("without credentials opens Probot's setup page, which registers the app from app.yml", async () => {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const child = spawn(process.execPath, [join(REPO_ROOT, "lib/app.js")], {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: mkdtempSync(join(tmpdir(), "agentrelay-start-")),
        PORT: String(port),
        NO_SMEE_SETUP: "true",
        LOG_LEVEL: "error",
      },
      stdio: "ignore",
    });
    try {
      let page = "";
      await until(async () => {
        page = await fetch(`http://127.0.0.1:${port}/probot`).then(
          (r) => r.text(),
          () => "",
        );
        return page !== "";
      }, "the setup page is served");
      // The manifest the page posts to GitHub carries app.yml's events and permissions.
      const manifest = JSON.parse(
        /name="manifest" id="manifest" value='([^']*)'/
          .exec(page)![1]!
          .replace(/&quot;/g, '"')
          .replace(/&amp;/g, "&"),
      );
      expect(manifest.default_events).toEqual([
        "push",
        "pull_request",
        "workflow_run",
        "check_suite",
        "check_run",
        "issue_comment",
      ]);
      expect(manifest.default_permissions).toMatchObject({
        actions: "write",
        contents: "write",
        metadata: "read",
      });
      expect(manifest.default_permissions).not.toHaveProperty("workflows");
    } finally {
      child.kill();
    }
  });
});

describe("npm start with credentials", () => {
  it("logs one line per request in every format, never a token or a body, and caps bodies", async () => {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const { privateKey } = generateKeyPairSync("rsa", {
      modulusLength: 2048,
      privateKeyEncoding: { type: "pkcs8", format: "pem" },
      publicKeyEncoding: { type: "spki", format: "pem" },
    });
    const child = spawn(process.execPath, [join(REPO_ROOT, "lib/app.js")], {
      cwd: mkdtempSync(join(tmpdir(), "agentrelay-start-")),
      env: {
        PATH: process.env.PATH,
        PORT: String(port),
        HOST: "127.0.0.1",
        APP_ID: "1",
        PRIVATE_KEY: privateKey,
        WEBHOOK_SECRET: "s3cret",
        LOG_FORMAT: "json",
        LOG_LEVEL: "debug",
        AGENTRELAY_RECONCILE_MS: "0",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    try {
      const url = `http://127.0.0.1:${port}`;
      await until(
        () =>
          fetch(`${url}/ping`).then(
            (r) => r.ok,
            () => false,
          ),
        "the app answers /ping",
      );
      const token = `eyJhbGciOiJSUzI1NiJ9.${"e".repeat(40)}.${"s".repeat(40)}`;
      const job = await fetch(`${url}/agentrelay/token`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ run: "g/1", task: "a", attempt: 1 }),
      });
      expect(job.status).toBe(401);
      const secretBody = `{"marker":"${"m".repeat(64)}"}`;
      const unsigned = await fetch(`${url}/api/github/webhooks`, {
        method: "POST",
        headers: { "x-github-event": "push", "x-github-delivery": "d-1", "x-hub-signature-256": "sha256=00" },
        body: secretBody,
      });
      expect(unsigned.status).toBe(400);
      const huge = await fetch(`${url}/api/github/webhooks`, {
        method: "POST",
        headers: { "x-github-event": "push", "x-github-delivery": "d-2", "x-hub-signature-256": "sha256=00" },
        body: "x".repeat(200 * 1024 * 1024),
      }).catch(() => null);
      if (huge) expect(huge.status).toBe(413);
      // The 200 MB body was refused before it was read: the app's peak memory stayed small.
      const peakKb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))![1]);
      expect(peakKb / 1024).toBeLessThan(200);
      await until(
        () => output.includes("refused 400") && output.includes("POST /agentrelay/token 401"),
        "the app logs both refusals",
      );
      expect(output).not.toContain(token);
      expect(output).not.toContain("m".repeat(64));
      expect(output).toContain("webhook d-1 (push): refused 400: the signature does not match");
      expect(output).toContain("POST /agentrelay/token 401");
      for (const line of output.trim().split("\n")) expect(() => JSON.parse(line)).not.toThrow();
    } finally {
      child.kill();
    }
  });
});

/** `npm start` as a process, and its output. */
function startProcess(env: Record<string, string>, cwd = mkdtempSync(join(tmpdir(), "agentrelay-start-"))) {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const child = spawn(process.execPath, [join(REPO_ROOT, "lib/app.js")], {
    cwd,
    env: { PATH: process.env.PATH, HOME: cwd, PORT: String(port), HOST: "127.0.0.1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const waitFor = (done: () => boolean | Promise<boolean>) => until(done, "npm start got so far");
  return { url: `http://127.0.0.1:${port}`, output: () => output, until: waitFor, stop: () => child.kill() };
}

describe("npm start reachable by GitHub", () => {
  it("registers the app's public URL as its webhook URL", async () => {
    const app = startProcess(
      { AGENTRELAY_PUBLIC_URL: "https://agentrelay.example.com", LOG_LEVEL: "error" },
      REPO_ROOT,
    );
    try {
      let page = "";
      await app.until(async () => {
        page = await fetch(`${app.url}/probot`).then(
          (r) => r.text(),
          () => "",
        );
        return page !== "";
      });
      const manifest = /name="manifest" id="manifest" value='([^']*)'/
        .exec(page)![1]!
        .replace(/&quot;/g, '"');
      expect(JSON.parse(manifest).hook_attributes).toEqual({
        url: "https://agentrelay.example.com/api/github/webhooks",
      });
    } finally {
      app.stop();
    }
  });

  it("takes deliveries from a webhook proxy channel (WEBHOOK_PROXY_URL), signatures checked", async () => {
    // A loopback stand-in for smee.io: one server-sent event per delivery, as the proxy relays them.
    const body = { zen: "Keep it logically awesome.", hook_id: 1 };
    const signature = `sha256=${createHmac("sha256", "s3cret").update(JSON.stringify(body)).digest("hex")}`;
    const deliveries = [
      {
        "x-github-event": "ping",
        "x-github-delivery": "via-proxy-1",
        "x-hub-signature-256": signature,
        body,
      },
      {
        "x-github-event": "ping",
        "x-github-delivery": "via-proxy-2",
        "x-hub-signature-256": "sha256=00",
        body,
      },
    ];
    const channel = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.write("event: ready\ndata: {}\n\n");
      for (const d of deliveries) res.write(`data: ${JSON.stringify(d)}\n\n`);
    });
    await new Promise<void>((done) => channel.listen(0, "127.0.0.1", done));
    const { port } = channel.address() as AddressInfo;
    const { privateKey } = generateKeyPairSync("rsa", {
      modulusLength: 2048,
      privateKeyEncoding: { type: "pkcs8", format: "pem" },
      publicKeyEncoding: { type: "spki", format: "pem" },
    });
    const app = startProcess({
      APP_ID: "1",
      PRIVATE_KEY: privateKey,
      WEBHOOK_SECRET: "s3cret",
      WEBHOOK_PROXY_URL: `http://127.0.0.1:${port}/channel`,
      AGENTRELAY_RECONCILE_MS: "0",
    });
    try {
      await app.until(() => app.output().includes("via-proxy-2"));
      expect(app.output()).toContain(`forwarding webhooks from http://127.0.0.1:${port}/channel`);
      expect(app.output()).toContain("webhook via-proxy-1 (ping): handled");
      expect(app.output()).toContain("webhook via-proxy-2 (ping): refused 400: the signature does not match");
    } finally {
      app.stop();
      channel.closeAllConnections();
      channel.close();
    }
  });
});

describe("npm start with its settings in .env", () => {
  it("reads every documented variable from .env, and accepts deliveries signed with the previous secret", async () => {
    const { privateKey } = generateKeyPairSync("rsa", {
      modulusLength: 2048,
      privateKeyEncoding: { type: "pkcs8", format: "pem" },
      publicKeyEncoding: { type: "spki", format: "pem" },
    });
    const cwd = mkdtempSync(join(tmpdir(), "agentrelay-start-"));
    // As Probot's setup page writes it, with the rotation variable added by hand.
    writeFileSync(
      join(cwd, ".env"),
      [
        "APP_ID=1",
        `PRIVATE_KEY="${privateKey.replace(/\n/g, "\\n")}"`,
        "WEBHOOK_SECRET=new-secret",
        "WEBHOOK_SECRET_PREVIOUS=old-secret",
        "AGENTRELAY_RECONCILE_MS=0",
        "",
      ].join("\n"),
    );
    const app = startProcess({}, cwd);
    const body = JSON.stringify({ zen: "Design for failure.", hook_id: 1 });
    const deliver = (secret: string, id: string) =>
      fetch(`${app.url}/api/github/webhooks`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-github-event": "ping",
          "x-github-delivery": id,
          "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
        },
        body,
      }).then((r) => r.status);
    try {
      await app.until(() =>
        fetch(`${app.url}/ping`).then(
          (r) => r.ok,
          () => false,
        ),
      );
      expect(await deliver("new-secret", "d-new"), app.output()).toBe(200);
      expect(await deliver("old-secret", "d-old"), app.output()).toBe(200);
      expect(await deliver("another", "d-other")).toBe(400);
    } finally {
      app.stop();
    }
  });
});

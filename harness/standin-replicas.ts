/**
 * The app's replicas behind the stand-in (standin.ts): real app servers (Probot with the app's
 * request handler) that share nothing but GitHub, killed and restarted as in a crash. Webhooks are
 * delivered to them signed, as GitHub delivers them, and the jobs' calls to the app's endpoints go to
 * any live one, as through a load balancer (the two take turns from one counter).
 */
import { generateKeyPairSync } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { sign } from "@octokit/webhooks-methods";
import { Probot } from "probot";
import { agentrelayApp, reportSecretOf } from "../src/app/index.ts";
import { agentrelayOctokit } from "../src/app/octokit.ts";
import { reconcileRepository } from "../src/app/reconcile.ts";
import { appRequestHandler } from "../src/app/server.ts";
import { DEFAULT_CONFIG, type GitHubClient } from "../src/github/client.ts";
import { oidcVerifier } from "../src/github/oidc.ts";
import { REPORT_KEY_HEADER } from "../src/protocol/report.ts";
import type { FakeGitHub } from "./fake-github.ts";
import { WAIT_MS } from "./patience.ts";

const SECRET = "e2e-webhook-secret";

/**
 * The app's private key, made once a process when a stand-in first needs it (app mode only): an RSA
 * key takes a CPU-second and more to generate on a busy machine, and each stand-in is an app of its
 * own at its own address, so sharing the key between them shows nothing less.
 */
let appKey: string | undefined;
const appPrivateKey = (): string =>
  (appKey ??= generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  }).privateKey);

export interface Delivery {
  id: string;
  name: string;
  payload: object;
}

export interface Replica {
  probot: Probot;
  server: Server;
  url: string;
  /** A killed replica's process is gone: its server is closed and it makes no more calls. */
  alive: boolean;
}

export class AppReplicas {
  readonly list: Replica[] = [];
  /** Requests jobs made to the app's endpoints, with the answer's status. */
  readonly jobRequests: { path: string; status: number }[] = [];
  private turn = 0;

  constructor(private readonly host: { readonly gh: FakeGitHub; readonly url: string }) {}

  /** The replicas still up. */
  live(): Replica[] {
    return this.list.filter((r) => r.alive);
  }

  /** The next live replica in turn, if any is up. */
  next(): Replica | undefined {
    const live = this.live();
    return live[this.turn++ % live.length];
  }

  private get privateKey(): string {
    return appPrivateKey();
  }

  /** A job's call to the app's endpoints, through the load balancer: any live replica answers. */
  async balance(req: IncomingMessage, url: URL, raw: string): Promise<[number, unknown]> {
    const replica = this.next();
    if (!replica) return [502, { error: "no app replica is up" }];
    const response = await fetch(`${replica.url}${url.pathname}`, {
      method: req.method,
      // A load balancer passes the request's headers on (the runner's report key among them).
      headers: {
        "content-type": "application/json",
        authorization: req.headers.authorization ?? "",
        ...(typeof req.headers[REPORT_KEY_HEADER] === "string"
          ? { [REPORT_KEY_HEADER]: req.headers[REPORT_KEY_HEADER] }
          : {}),
      },
      body: raw,
    }).catch(() => null);
    const answer: [number, unknown] = response
      ? [response.status, await response.json()]
      : [502, { error: "the replica went away" }];
    this.jobRequests.push({ path: url.pathname, status: answer[0] });
    return answer;
  }

  /** Starts an app server, as a replica of the app is deployed. */
  async start(): Promise<Replica> {
    const replica = { alive: true } as Replica;
    const config = { ...DEFAULT_CONFIG, statusIntervalMs: 0, oidcIssuer: `${this.host.url}/oidc-issuer` };
    const probot = new Probot({
      appId: 1,
      privateKey: this.privateKey,
      secret: SECRET,
      baseUrl: this.host.url,
      logLevel: "fatal",
      Octokit: agentrelayOctokit({ retryBaseMs: 5 }).defaults((o: object) => ({
        ...o,
        throttle: { enabled: false },
        pacing: { clock: this.host.gh.clock, maxWaitMs: Infinity },
      })),
      request: {
        fetch: (input: string | URL | Request, init?: RequestInit) =>
          replica.alive
            ? fetch(input, init)
            : Promise.reject(new TypeError("fetch failed: the app process is gone")),
      },
    });
    const app = agentrelayApp({
      config,
      verify: oidcVerifier({ issuer: config.oidcIssuer, audience: config.oidcAudience }),
      // As every replica of the app derives it: from the private key they share.
      reportSecret: reportSecretOf({ PRIVATE_KEY: this.privateKey }),
    });
    // A delivery is answered once its handler is done, however long a busy machine takes.
    const handler = await appRequestHandler(probot, app, {
      secret: SECRET,
      log: () => {},
      answerWithinMs: WAIT_MS,
    });
    const server = createServer((req, res) => void handler(req, res));
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    return Object.assign(replica, {
      probot,
      server,
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    });
  }

  /** Kills a replica (its in-flight work stops where it is, as in a crash) and starts a fresh one. */
  async restart(index = 0): Promise<void> {
    const old = this.list[index]!;
    old.alive = false;
    old.server.closeAllConnections();
    await new Promise((done) => old.server.close(done));
    this.list[index] = await this.start();
  }

  /** What the app's periodic sweep does, for the stand-in's repository. */
  async reconcile(): Promise<void> {
    const octokit = (await this.list[0]!.probot.auth(this.host.gh.installationId)) as unknown as GitHubClient;
    const config = { ...DEFAULT_CONFIG, statusIntervalMs: 0 };
    await reconcileRepository({
      octokit,
      owner: "octo",
      repo: "demo",
      defaultBranch: "main",
      config,
      now: Date.now,
      log: () => undefined,
    });
  }

  /** Delivers a webhook to a replica, signed as GitHub signs it; the answer's status (0: none). */
  async post(replica: Replica, delivery: Delivery): Promise<number> {
    const body = JSON.stringify(delivery.payload);
    const response = await fetch(`${replica.url}/api/github/webhooks`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": delivery.name,
        "x-github-delivery": delivery.id,
        "x-hub-signature-256": await sign(SECRET, body),
      },
      body,
    }).catch(() => null);
    await response?.text();
    return response?.status ?? 0;
  }

  async close(): Promise<void> {
    for (const replica of this.list) {
      replica.server.closeAllConnections();
      await new Promise((done) => replica.server.close(done));
    }
  }
}

/**
 * A fake GitHub of several repositories, each a FakeGitHub of its own, and the app's installations on
 * them: the app installed on some repositories and not on others, each installation with the
 * permissions it was granted, and the installation tokens minted from them scoped as GitHub scopes
 * them. Requests under `/repos/OWNER/NAME` go to that repository's fake; the app's own routes
 * (installations, tokens) are answered here; anything else goes to the first repository, the graph's.
 *
 * GitHub's rules it keeps, from the REST reference:
 * - a token "has access to all repositories that the installation can access" unless `repositories`
 *   names some, and "cannot be granted access to repositories that the installation was not granted
 *   access to": 422 "There is at least one repository that does not exist or is not accessible to the
 *   parent installation"; `repositories` are names without the owner, of the installation's account;
 *   permissions above the installation's are 422 too
 *   (https://docs.github.com/en/rest/apps/apps#create-an-installation-access-token-for-an-app);
 * - `GET /repos/{owner}/{repo}/installation` answers 404 where the app is not installed
 *   (https://docs.github.com/en/rest/apps/apps#get-a-repository-installation-for-the-authenticated-app);
 * - a token asking about a repository outside its scope gets 404 Not Found (GitHub does not say that a
 *   private repository exists), and a request its permissions do not cover gets 403 "Resource not
 *   accessible by integration", each endpoint needing the permission GitHub lists for it
 *   (https://docs.github.com/en/rest/authentication/permissions-required-for-github-apps);
 * - `GET /installation/repositories` lists the token's repositories
 *   (https://docs.github.com/en/rest/apps/installations#list-repositories-accessible-to-the-app-installation);
 * - ids are GitHub's, unique across repositories (a workflow run's `run_id` is "the unique identifier
 *   of the workflow run": https://docs.github.com/en/rest/actions/workflow-runs#get-a-workflow-run),
 *   and a run is found under its own repository only;
 * - each repository has its own collaborators, each with a role there (`collaborator`), answered by
 *   "Get repository permissions for a user" with Metadata read
 *   (https://docs.github.com/en/rest/collaborators/collaborators#get-repository-permissions-for-a-user).
 *
 * - a workflow's GITHUB_TOKEN (`workflowToken`) reaches the repository of its workflow only: "The
 *   token's permissions are limited to the repository that contains your workflow"
 *   (https://docs.github.com/actions/security-guides/automatic-token-authentication); elsewhere 404,
 *   as for any token that may not see a private repository.
 *
 * Any other token it did not mint (a person's) is answered as the one-repository fake answers it. GraphQL is routed by its `owner` and `name` variables; a mutation naming a node id
 * goes to the graph's repository.
 */
import { FakeGitHub } from "./fake-github.ts";
import { Redirect, type Reply } from "./fake-reply.ts";
import { mountWithNock } from "./fake-mount.ts";
import type { RateLimits } from "./fake-rate-limits.ts";
import { MemoryStore, type RepoStore } from "./repo-store.ts";

export interface FakeInstallation {
  id: number;
  /** The account the app is installed on (a user or an organization). */
  account: string;
  /** The repositories it was granted, as `OWNER/NAME` (lower case: GitHub's names ignore case). */
  repositories: Set<string>;
  /** What the installation was granted (app.yml's default_permissions, unless a test grants less). */
  permissions: Record<string, string>;
  /** A suspended installation: its tokens and new ones are refused (403). */
  suspended?: boolean;
  /**
   * Its rate limits, one count for all its repositories: GitHub counts an installation's primary limit
   * ("5,000 requests per hour" for the installation) and its secondary limits (content-generating
   * requests, points) per installation, not per repository
   * (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#primary-rate-limit-for-github-app-installations).
   * The first repository's limits become the installation's.
   */
  limits?: RateLimits;
}

/** A token the app minted, and what it reaches. */
interface Minted {
  installation: number;
  repositories: Set<string>;
  permissions: Record<string, string>;
}

/** app.yml's default_permissions: what an installation grants unless a test says otherwise. */
export const APP_PERMISSIONS: Record<string, string> = {
  actions: "write",
  contents: "write",
  checks: "write",
  pull_requests: "write",
  issues: "write",
  metadata: "read",
};

/**
 * The permission an endpoint needs (GitHub's "Permissions required for GitHub Apps"), read for GET
 * and write otherwise; metadata (the repository, collaborators) is read by every token.
 */
export function permissionOf(method: string, rest: string): [string, "read" | "write"] {
  const level = method === "GET" ? "read" : "write";
  if (rest === "" || /^\/collaborators\//.test(rest)) return ["metadata", "read"];
  if (/^\/(actions)\//.test(rest)) return ["actions", level];
  if (/^\/(check-runs|commits\/[^/]+\/check-runs)/.test(rest)) return ["checks", level];
  if (/^\/pulls/.test(rest)) return [/\/merge$/.test(rest) ? "contents" : "pull_requests", level];
  if (/^\/issues/.test(rest)) return ["issues", level];
  return ["contents", level];
}

const covers = (granted: string | undefined, needed: "read" | "write") =>
  granted === "write" || (granted === "read" && needed === "read");

const key = (fullName: string) => fullName.toLowerCase();

export class FakeRepositories {
  /** Each repository's fake, by `owner/name` in lower case; the first is the graph's. */
  readonly repositories = new Map<string, FakeGitHub>();
  readonly installations: FakeInstallation[] = [];
  private readonly minted = new Map<string, Minted>();
  /** The GITHUB_TOKENs of workflows, each with the repository it reaches (in lower case). */
  private readonly workflowTokens = new Map<string, string>();
  /** A person's tokens with a reach of their own (a fine-grained token's Repository access). */
  private readonly personal = new Map<string, { repositories: Set<string>; access: "read" | "write" }>();

  /** Starts with `first` (the graph's repository), the app installed on it as `first.installationId`. */
  constructor(readonly first: FakeGitHub = new FakeGitHub()) {
    this.repositories.set(key(`${first.owner}/${first.repo}`), first);
    this.install(first.installationId, first.owner, [`${first.owner}/${first.repo}`]);
  }

  /**
   * Adds a repository (`OWNER/NAME`); `installation`: the installation that covers it (made for its
   * owner when new), or null for a repository the app is not installed on.
   */
  add(fullName: string, installation: number | null, store: RepoStore = new MemoryStore()): FakeGitHub {
    const [owner, repo] = fullName.split("/") as [string, string];
    const gh = new FakeGitHub(store, { owner, repo, installationId: installation ?? 0 });
    gh.clock.follow(this.first.clock);
    gh.ids = this.first.ids; // one GitHub: a run id names one run, whichever repository it is in
    this.repositories.set(key(fullName), gh);
    if (installation !== null) this.install(installation, owner, [fullName]);
    return gh;
  }

  /** Grants installation `id` (made, for `account`, when new) these repositories. */
  install(id: number, account: string, repositories: string[], permissions = APP_PERMISSIONS): void {
    let installation = this.installations.find((i) => i.id === id);
    if (!installation) {
      installation = { id, account, repositories: new Set(), permissions: { ...permissions } };
      this.installations.push(installation);
    }
    for (const r of repositories) {
      installation.repositories.add(key(r));
      const gh = this.repositories.get(key(r));
      if (gh) gh.rateLimits = installation.limits ??= gh.rateLimits;
    }
  }

  /**
   * Takes a repository out of every installation (a person removed it from the app's repositories):
   * tokens minted before lose it too, as GitHub checks the installation's access on each request.
   */
  uninstall(fullName: string): void {
    for (const installation of this.installations) installation.repositories.delete(key(fullName));
  }

  /**
   * A person's token that reaches only `repositories`, reading or also writing (a fine-grained token):
   * elsewhere 404, and its writes refused 403 where it only reads; `GET /repos/{owner}/{repo}` says
   * which in `permissions`, as GitHub answers an authenticated user.
   */
  grant(token: string, repositories: string[], access: "read" | "write"): void {
    this.personal.set(token, { repositories: new Set(repositories.map(key)), access });
  }

  /**
   * Gives `login` a role in `OWNER/NAME` ("admin", "maintain", "write", "triage", "read", or "none": not
   * a collaborator), as "Get repository permissions for a user" will answer it there (fake-issue-routes).
   */
  collaborator(fullName: string, login: string, role: string): void {
    this.get(fullName).permissions.set(login, role);
  }

  /** A GITHUB_TOKEN of a workflow of `OWNER/NAME` (`token`: one already in use there, else a new one). */
  workflowToken(
    fullName: string,
    token = `ghs_${String(this.workflowTokens.size + 1).padStart(36, "w")}`,
  ): string {
    this.workflowTokens.set(token, key(fullName));
    return token;
  }

  /**
   * A token minted as actions/create-github-app-token mints it in a workflow (POST
   * /app/installations/{id}/access_tokens): for `repositories` (names of the installation's account),
   * with `permissions` (the installation's unless named).
   */
  mintToken(installation: number, repositories: string[], permissions?: Record<string, string>): string {
    const [status, body] = this.mint(installation, { repositories, ...(permissions ? { permissions } : {}) });
    if (status !== 201) throw new Error(`minting a token: ${status} ${JSON.stringify(body)}`);
    return (body as { token: string }).token;
  }

  /** The fake of `OWNER/NAME`. */
  get(fullName: string): FakeGitHub {
    const gh = this.repositories.get(key(fullName));
    if (!gh) throw new Error(`the fake holds no repository ${fullName}`);
    return gh;
  }

  /** What a minted token reaches now: its own scope within what its installation still has. */
  private scopeOf(token: string): Minted | undefined {
    const minted = this.minted.get(token);
    if (!minted) return undefined;
    const installation = this.installations.find((i) => i.id === minted.installation)!;
    const repositories = new Set([...minted.repositories].filter((r) => installation.repositories.has(r)));
    return { ...minted, repositories };
  }

  async serve(method: string, url: string, body: unknown, accept = "", authorization = ""): Promise<Reply> {
    const path = decodeURIComponent(url.split("?")[0] ?? "");
    const token = authorization.replace(/^(token|bearer)\s+/i, "");
    const own = this.appRoute(method, path, body, token);
    if (own) return own;
    const scope = this.scopeOf(token);
    const place = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(path);
    const graphql = path === "/graphql" ? graphqlRepository(body) : null;
    const fullName = place ? `${place[1]}/${place[2]}` : graphql;
    if (!fullName) return this.first.serve(method, url, body, accept, authorization);
    const gh = this.repositories.get(key(fullName));
    const workflowRepository = this.workflowTokens.get(token);
    if (
      !gh ||
      (scope && !scope.repositories.has(key(fullName))) ||
      (workflowRepository ?? key(fullName)) !== key(fullName)
    ) {
      this.first.calls.push({ method, path: url, body, status: 404 });
      return [404, { message: "Not Found" }];
    }
    const person = this.personal.get(token);
    if (person && fullName) {
      if (!gh || !person.repositories.has(key(fullName))) return [404, { message: "Not Found" }];
      if (method !== "GET" && person.access === "read")
        return [403, { message: "Resource not accessible by personal access token" }];
      const reply = await gh.serve(method, url, body, accept, authorization);
      if (method !== "GET" || place?.[3] !== undefined || reply[0] !== 200) return reply;
      const push = person.access === "write";
      return [200, { ...(reply[1] as object), permissions: { admin: false, push, pull: true } }, reply[2]];
    }
    if (scope && place) {
      const [permission, level] = permissionOf(method, place[3] ?? "");
      if (!covers(scope.permissions[permission], level)) {
        gh.calls.push({ method, path: url, body, status: 403 });
        return [403, { message: "Resource not accessible by integration" }];
      }
    }
    return gh.serve(method, url, body, accept, authorization);
  }

  /** The app's own routes, answered from the installations (null: not one of them). */
  private appRoute(method: string, path: string, body: unknown, token: string): Reply | null {
    if (method === "GET" && path === "/app/installations")
      return [200, this.installations.map((i) => ({ id: i.id, account: { login: i.account } }))];
    const minting = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(path);
    if (method === "POST" && minting) return this.mint(Number(minting[1]), (body ?? {}) as MintRequest);
    const installed = /^\/repos\/([^/]+)\/([^/]+)\/installation$/.exec(path);
    if (method === "GET" && installed) {
      const fullName = key(`${installed[1]}/${installed[2]}`);
      const installation = this.installations.find((i) => i.repositories.has(fullName));
      return installation
        ? [200, { id: installation.id, account: { login: installation.account } }]
        : [404, { message: "Not Found" }];
    }
    if (method === "GET" && path === "/installation/repositories") {
      const scope = this.scopeOf(token);
      const names = scope ? [...scope.repositories] : [key(`${this.first.owner}/${this.first.repo}`)];
      const all = [...this.repositories.keys()];
      const repositories = names.map((n) => repositoryOf(this.repositories.get(n)!, all.indexOf(n)));
      return [200, { total_count: repositories.length, repositories }];
    }
    return null;
  }

  private mint(id: number, request: MintRequest): Reply {
    const installation = this.installations.find((i) => i.id === id);
    if (!installation) return [404, { message: "Not Found" }];
    if (installation.suspended) return [403, { message: "This installation has been suspended" }];
    const named = (request.repositories ?? []).map((name) => key(`${installation.account}/${name}`));
    if (named.some((r) => !installation.repositories.has(r)))
      return [
        422,
        {
          message:
            "There is at least one repository that does not exist or is not accessible to the parent installation.",
        },
      ];
    const permissions = request.permissions ?? installation.permissions;
    if (
      Object.entries(permissions).some(([p, level]) => !covers(installation.permissions[p], level as "read"))
    )
      return [422, { message: "The permissions requested are not granted to this installation." }];
    const repositories = new Set(named.length > 0 ? named : installation.repositories);
    const token = `ghs_${String(this.minted.size + 1).padStart(36, "r")}`;
    this.minted.set(token, { installation: id, repositories, permissions });
    // Each repository's fake keeps the tokens minted for it (what the single-repository tests read).
    for (const r of repositories)
      this.repositories.get(r)?.tokens.push({ permissions, repositories: request.repositories ?? [] });
    return [
      201,
      { token, expires_at: "2099-01-01T00:00:00Z", permissions, repository_selection: "selected" },
    ];
  }

  /**
   * A fetch that answers in process, each repository from its fake and each token within its reach;
   * an artifact's download redirect is followed to the archive of the repository it was asked of.
   */
  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    const headers = new Headers(init?.headers);
    const raw = typeof init?.body === "string" ? init.body : "";
    const [status, data, replyHeaders] = await this.serve(
      init?.method ?? "GET",
      url.pathname + url.search,
      raw ? JSON.parse(raw) : undefined,
      headers.get("accept") ?? "",
      headers.get("authorization") ?? "",
    );
    if (data instanceof Redirect) {
      const [, owner, repo] = /^\/repos\/([^/]+)\/([^/]+)\//.exec(url.pathname) ?? [];
      const id = Number(/artifact-(\d+)$/.exec(data.location)![1]);
      const zip = this.get(`${owner}/${repo}`).artifacts.find((a) => a.id === id)!.zip;
      return new Response(zip, { status: 200, headers: { "content-type": "application/zip" } });
    }
    const text = typeof data === "string";
    return new Response(status === 204 || data === undefined ? null : text ? data : JSON.stringify(data), {
      status,
      headers: { ...replyHeaders, "content-type": text ? "text/plain" : "application/json" },
    });
  };

  /** Answers api.github.com through nock until `nock.cleanAll()`. */
  mount(origin = "https://api.github.com"): void {
    mountWithNock(origin, this.serve.bind(this));
  }
}

interface MintRequest {
  repositories?: string[];
  permissions?: Record<string, string>;
}

/** The repository a GraphQL request reads (`repository(owner: $owner, name: $name)`), if any. */
function graphqlRepository(body: unknown): string | null {
  const variables = (body as { variables?: Record<string, unknown> } | undefined)?.variables ?? {};
  return typeof variables.owner === "string" && typeof variables.name === "string"
    ? `${variables.owner}/${variables.name}`
    : null;
}

const repositoryOf = (gh: FakeGitHub, index: number) => ({
  id: 7 + index,
  name: gh.repo,
  full_name: `${gh.owner}/${gh.repo}`,
  owner: { login: gh.owner },
  default_branch: "main",
});

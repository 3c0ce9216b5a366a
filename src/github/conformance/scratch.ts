/**
 * The scratch the conformance suite works on in a repository: a base branch made from the default
 * branch's head, a branch and a pull request per case, rulesets on the base branch. Nothing touches
 * the default branch; everything made is undone at the end, whatever happened (rulesets removed,
 * pull requests closed, branches deleted), and what could not be is said.
 */
import type { GitHubClient } from "../client.ts";
import { messageOf, statusOf } from "../client.ts";
import { NotObservable, type Probe, type ScratchPull } from "./model.ts";

export class Scratch implements Pick<Probe, "base" | "pull" | "commit" | "ruleset" | "undo"> {
  /** The branch prefix of this run's scratch: agentrelay-conformance/<id>/. */
  readonly prefix: string;
  private baseBranch: Promise<string> | null = null;
  private readonly steps: { what: string; run: () => Promise<unknown> }[] = [];

  constructor(
    private readonly client: GitHubClient,
    private readonly owner: string,
    private readonly repo: string,
    private readonly defaultBranch: string,
    id: string,
  ) {
    this.prefix = `agentrelay-conformance/${id}`;
  }

  private get repository() {
    return { owner: this.owner, repo: this.repo };
  }

  base(): Promise<string> {
    this.baseBranch ??= (async () => {
      const { data } = await this.client.rest.git.getRef({
        ...this.repository,
        ref: `heads/${this.defaultBranch}`,
      });
      return this.branch("base", data.object.sha);
    })();
    return this.baseBranch;
  }

  private async branch(name: string, sha: string): Promise<string> {
    const branch = `${this.prefix}/${name}`;
    await this.client.rest.git.createRef({ ...this.repository, ref: `refs/heads/${branch}`, sha });
    this.steps.push({
      what: `branch ${branch}`,
      run: () => this.client.rest.git.deleteRef({ ...this.repository, ref: `heads/${branch}` }),
    });
    return branch;
  }

  undo(what: string, run: () => Promise<unknown>): void {
    this.steps.push({ what, run });
  }

  async commit(files: Record<string, string | null>, parent?: string): Promise<string> {
    const from =
      parent ??
      (await this.client.rest.git.getRef({ ...this.repository, ref: `heads/${await this.base()}` })).data
        .object.sha;
    const { data: parentCommit } = await this.client.rest.git.getCommit({
      ...this.repository,
      commit_sha: from,
    });
    const { data: tree } = await this.client.rest.git.createTree({
      ...this.repository,
      base_tree: parentCommit.tree.sha,
      tree: Object.entries(files).map(([path, content]) =>
        content === null
          ? { path, mode: "100644" as const, type: "blob" as const, sha: null }
          : { path, mode: "100644" as const, type: "blob" as const, content },
      ),
    });
    const { data } = await this.client.rest.git.createCommit({
      ...this.repository,
      message: "agentrelay conformance (scratch)",
      tree: tree.sha,
      parents: [from],
    });
    return data.sha;
  }

  async pull(name: string, files?: Record<string, string>): Promise<ScratchPull> {
    const base = await this.base();
    const headSha = await this.commit(files ?? { [`agentrelay-conformance/${name}.txt`]: `${name}\n` });
    const head = await this.branch(name, headSha);
    const { data } = await this.client.rest.pulls.create({
      ...this.repository,
      head,
      base,
      title: `agentrelay conformance: ${name} (scratch, closed when the suite ends)`,
      body: "Opened by `agentrelay conformance` on a scratch branch; it is closed and its branch deleted when the suite ends.",
    });
    this.steps.push({
      what: `pull request #${data.number}`,
      run: () =>
        this.client.rest.pulls.update({ ...this.repository, pull_number: data.number, state: "closed" }),
    });
    return { number: data.number, nodeId: data.node_id, head, headSha };
  }

  async ruleset(name: string, rules: object[]): Promise<() => Promise<void>> {
    const base = await this.base();
    let id: number;
    try {
      const { data } = await this.client.request("POST /repos/{owner}/{repo}/rulesets", {
        ...this.repository,
        name: `${this.prefix} ${name}`,
        target: "branch",
        enforcement: "active",
        conditions: { ref_name: { include: [`refs/heads/${base}`], exclude: [] } },
        rules: rules as never,
      });
      id = (data as { id: number }).id;
    } catch (error) {
      const status = statusOf(error);
      if (status === 403 || status === 404)
        throw new NotObservable("the person's token may not make rulesets here (needs admin)");
      if (status === 422) throw new NotObservable(`GitHub refused the ruleset: ${messageOf(error)}`);
      throw error;
    }
    let removed = false;
    const remove = async () => {
      if (removed) return;
      removed = true;
      await this.client.request("DELETE /repos/{owner}/{repo}/rulesets/{ruleset_id}", {
        ...this.repository,
        ruleset_id: id,
      });
    };
    this.steps.push({ what: `ruleset ${id}`, run: remove });
    return remove;
  }

  /** Undoes everything, latest first; returns what could not be undone, one line each. */
  async cleanUp(): Promise<string[]> {
    const left: string[] = [];
    for (const step of this.steps.splice(0).reverse()) {
      try {
        await step.run();
      } catch (error) {
        // Already gone (a merged PR's branch deleted by the repository, say) is undone.
        if (statusOf(error) !== 404 && statusOf(error) !== 422)
          left.push(`${step.what}: ${messageOf(error)}`);
      }
    }
    return left;
  }
}

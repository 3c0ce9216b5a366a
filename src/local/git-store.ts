/**
 * A StateStore on local git refs: each run is a ref (`refs/agentrelay/runs/<graph>/<run>`) pointing at
 * a commit whose tree holds `state.json`, each write a commit on top of the version read. The write is
 * `git update-ref REF NEW OLD`, which git applies only if REF still points at OLD: a real
 * compare-and-swap. The history of a run is `git log -p refs/agentrelay/runs/<graph>/<run>`.
 */
import type { StateStore, Versioned } from "../engine/store.ts";
import type { RunState } from "../engine/types.ts";
import { git, gitRaw } from "../attempt/git.ts";

const ZERO = "0".repeat(40);

export const stateRef = (run: string): string => `refs/agentrelay/runs/${run}`;

export class GitRefStateStore implements StateStore {
  constructor(private readonly repo: string) {}

  async load(run: string): Promise<Versioned | null> {
    const head = await gitRaw(this.repo, ["rev-parse", "--verify", "--quiet", `${stateRef(run)}^{commit}`]);
    if (head.code !== 0) return null;
    const version = head.stdout.trim();
    const json = await git(this.repo, ["cat-file", "blob", `${version}:state.json`]);
    return { state: JSON.parse(json) as RunState, version };
  }

  async compareAndSwap(run: string, expected: string | null, next: RunState): Promise<string | null> {
    const blob = await git(this.repo, ["hash-object", "-w", "--stdin"], `${JSON.stringify(next, null, 1)}\n`);
    const tree = await git(this.repo, ["mktree"], `100644 blob ${blob}\tstate.json\n`);
    const parents = expected ? ["-p", expected] : [];
    const message = `${run}: state ${next.seq}${next.outcome ? ` (${next.outcome})` : ""}`;
    const commit = await git(this.repo, ["commit-tree", tree, ...parents, "-m", message]);
    const update = await gitRaw(this.repo, ["update-ref", stateRef(run), commit, expected ?? ZERO]);
    return update.code === 0 ? commit : null;
  }
}

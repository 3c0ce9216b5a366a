// The history `npm run demo` shows at its end: the target branch's whole graph of commits (every task
// merge and every integration), never a first screen of it.
import { execFileSync } from "node:child_process";

/** `git log --oneline --graph BRANCH` in `repo`, whole. */
export const history = (repo, branch) =>
  execFileSync("git", ["log", "--oneline", "--graph", branch], { cwd: repo, encoding: "utf8" });

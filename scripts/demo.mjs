// `npm run demo`: creates a temporary git repository, commits the embedded diamond graph, and runs it
// to completion with the real Claude Code driven by the built-in scripted model (no account needed).
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { history } from "./demo-history.mjs";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const repo = mkdtempSync(join(tmpdir(), "agentrelay-demo-"));
const git = (...args) => execFileSync("git", args, { cwd: repo, stdio: "ignore" });
git("init", "-q", "-b", "main");
mkdirSync(join(repo, ".workflow"));
copyFileSync(join(root, "examples/demo.yaml"), join(repo, ".workflow/demo.yaml"));
git("add", ".");
git("-c", "user.name=demo", "-c", "user.email=demo@example.com", "commit", "-q", "-m", "Add the demo graph");
console.log(`Demo repository: ${repo}\n`);
const run = spawnSync(
  process.execPath,
  [join(root, "bin/agentrelay.js"), "run", ".workflow/demo.yaml", "--repo", repo, "--scripted-model"],
  {
    cwd: repo,
    stdio: "inherit",
  },
);
if (run.status === 0) {
  console.log(`\nThe work is on main in ${repo}:`);
  console.log(history(repo, "main"));
}
process.exit(run.status ?? 1);

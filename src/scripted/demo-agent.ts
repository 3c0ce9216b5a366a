/**
 * The built-in scripted agent of the demo and of `--scripted-model`: it reads the attempt's
 * manifest (its path is in the opening prompt), writes each file the task names (its tagged paths,
 * or a note), then hands back a summary, its declared outputs, and completes. A cyberian step gets
 * the completion status line its prompt asks for; a resolution keeps both sides of each conflict.
 * Claude Code runs every
 * step for real; only the model's decisions are scripted.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { promptOf, type Script, toolResults, userPrompts } from "./model-server.ts";

export interface Manifest {
  task: { id: string; description: string | null };
  paths: { path: string; category: string }[];
  execution: { attempt_num: number };
}

/** The attempt's manifest.json, found through the instructions path the opening prompt names. */
export function manifestFor(prompt: string): Manifest | null {
  const match = /Read (\S+instructions\.md)/.exec(prompt);
  if (!match) return null;
  const file = join(dirname(match[1]!), "manifest.json");
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Manifest) : null;
}

const quote = (text: string) => `'${text.replace(/'/g, "'\\''")}'`;

/**
 * A resolution's prompt names the conflicted files: the scripted agent keeps both sides of each
 * conflict (ours, then theirs), removing the markers, as an agent that means both intents would.
 */
export function resolveKeepingBoth(prompt: string, done: number): ReturnType<Script> {
  const files = [...prompt.matchAll(/^- `([^`]+)`$/gm)].map((m) => m[1]!);
  if (done < files.length) {
    const file = quote(files[done]!);
    return {
      tools: [
        {
          name: "Bash",
          input: {
            command: `sed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' ${file}`,
            description: `keep both sides in ${files[done]}`,
          },
        },
      ],
    };
  }
  return { text: `Resolved ${files.join(", ")}, keeping both sides.` };
}

export const demoAgent: Script = (request) => {
  const prompt = promptOf(request);
  if (prompt.includes("Resolve the merge conflicts:"))
    return resolveKeepingBoth(prompt, toolResults(request).length);
  const manifest = manifestFor(prompt);
  if (!manifest) {
    // A cyberian step: its prompt asks for a completion status line; a loop's own status ends the loop.
    // A step that continues the workflow's session is asked in the latest prompt, not the first.
    const latest = userPrompts(request).at(-1) ?? prompt;
    const loopStatus = /says exactly `COMPLETION_STATUS: (\w+)` instead/.exec(latest)?.[1];
    return { text: `Done.\nCOMPLETION_STATUS: ${loopStatus ?? "COMPLETE"}` };
  }
  const { id, description } = manifest.task;
  const files = manifest.paths.length > 0 ? manifest.paths : [{ path: `notes/${id}.md`, category: "docs" }];
  const steps = files.map((f) => ({
    name: "Bash",
    input: {
      command: `mkdir -p ${quote(dirname(f.path))} && printf '%s\\n' ${quote(`# ${f.path}: written for task ${id}`)} ${quote(description ?? "")} > ${quote(f.path)}`,
      description: `write ${f.path}`,
    },
  }));
  const declare = files.map(
    (f) => `agentrelay-declare --path ${quote(f.path)} --action created --category ${quote(f.category)}`,
  );
  steps.push({
    name: "Bash",
    input: {
      command: [
        `agentrelay-summary --message ${quote(`Wrote ${files.map((f) => f.path).join(", ")} for ${id}.`)}`,
        ...declare,
        "agentrelay-complete",
      ].join(" && "),
      description: "hand back",
    },
  });
  const done = toolResults(request).length;
  return done < steps.length ? { tools: [steps[done]!] } : { text: `Task ${id} is done.` };
};

/**
 * What a user reads about the commands: each command's `--help` says what every option takes and
 * does, and docs/cli.md's section on each command names every option it takes. In-process: no
 * command runs.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { COMMANDS, main } from "../../src/cli/main.ts";
import { REPO_ROOT } from "../support/fixtures.ts";

const commands = Object.entries(COMMANDS).filter(([, c]) => !c.internal);

async function help(name: string): Promise<string> {
  let out = "";
  const code = await main([name, "--help"], { out: (t) => (out += t), err: (t) => (out += t) });
  expect(code).toBe(0);
  return out;
}

describe("each command's --help", () => {
  it.each(commands.map(([name]) => name))("%s describes each of its options", async (name) => {
    const text = await help(name);
    for (const [option, spec] of Object.entries(COMMANDS[name]!.options)) {
      expect(spec.help.length, `--${option} of ${name}`).toBeGreaterThan(10);
      const line = text
        .split("\n")
        .find((l) => l.trimStart().startsWith(`--${option}${spec.value ? ` ${spec.value}` : ""}`));
      expect(line, `${name} --help: --${option}`).toContain(spec.help);
    }
    expect(text).toMatch(/\n {2}--help +show this help\n/);
  });
});

describe("docs/cli.md", () => {
  const page = readFileSync(join(REPO_ROOT, "docs/cli.md"), "utf8");
  /** The text of the section `### \`name\``, up to the next heading. */
  const section = (name: string) => {
    const start = page.search(new RegExp(`^### .*\`${name}\``, "m"));
    expect(start, `a section on ${name}`).toBeGreaterThan(0);
    const rest = page.slice(start + 4);
    return rest.slice(0, rest.search(/^#{2,3} /m));
  };

  it.each(commands.map(([name]) => name))("names every option of %s in its section", (name) => {
    const text = section(name);
    for (const option of Object.keys(COMMANDS[name]!.options))
      expect(text, `${name}: --${option}`).toContain(`--${option}`);
  });
});

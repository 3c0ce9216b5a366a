/**
 * Loads the Markdown templates under `templates/` (role texts and instruction sections) and fills
 * `${name}` placeholders. Templates are plain text on purpose: they are read by people who tune
 * prompts, and they hold no logic.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

let root: string | undefined;

/** The package's `templates/` directory, found from this module whether run from src, lib or dist. */
export function templatesDir(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, "templates");
    if (existsSync(join(candidate, "roles"))) {
      root = candidate;
      return root;
    }
    dir = dirname(dir);
  }
  throw new Error("cannot find agentrelay's templates/ directory");
}

const cache = new Map<string, string>();

export function template(name: string): string {
  let text = cache.get(name);
  if (text === undefined) {
    const file = join(templatesDir(), `${name}.md`);
    if (!existsSync(file)) throw new Error(`missing template ${name}.md in ${templatesDir()}`);
    text = readFileSync(file, "utf8").trimEnd();
    cache.set(name, text);
  }
  return text;
}

/** Replaces `${key}` with values; an unknown placeholder is a bug in a template, so it throws. */
export function fill(text: string, values: Record<string, string>): string {
  return text.replace(/\$\{(\w+)\}/g, (_, key: string) => {
    const value = values[key];
    if (value === undefined) throw new Error(`template placeholder \${${key}} has no value`);
    return value;
  });
}

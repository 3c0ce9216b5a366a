/**
 * Loads the Markdown templates under `templates/` (role texts and instruction sections) and renders
 * them with the one template engine there is (MiniJinja, as cyberian workflows are): `{{ name }}`
 * placeholders, and an unknown one is an error. They are read by people who tune prompts.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { renderTemplate } from "../template/jinja.ts";

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

/** Renders a template with `values`; a placeholder without a value is a bug in the template, so it throws. */
export function fill(name: string, values: Record<string, string>): string {
  return renderTemplate(template(name), values);
}

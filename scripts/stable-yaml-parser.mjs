// An esbuild plugin that bundles js-yaml with its parser state built as a plain object literal.
//
// js-yaml 5.5 builds the state of each parse as `{ ...DEFAULT_PARSER_OPTIONS, ...options, input, ... }`.
// V8 gives an object built by spreading a hidden class that only live objects keep alive, so once a
// parse is over the next full collection frees it and throws away every optimized parser function that
// depended on it ("weak objects" deopts); each later parse runs unoptimized until V8 recompiles. A
// long-running app parsing 10,000-task graphs spent ~90 ms per parse instead of ~55 ms. A literal's
// hidden class is held by its allocation site, so building the same object as a literal keeps the
// optimized parser for the life of the process. Only the two options parseEvents reads are copied.
//
// The rewrite must match exactly once: a js-yaml release that changes this code fails the build, so
// whoever upgrades checks whether the fix is still needed (and drops this plugin if not).
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

const SPREAD_STATE = /\.\.\.DEFAULT_PARSER_OPTIONS,\s*\.\.\.options,/g;
const LITERAL_STATE =
  "filename: options.filename ?? DEFAULT_PARSER_OPTIONS.filename, maxDepth: options.maxDepth ?? DEFAULT_PARSER_OPTIONS.maxDepth,";

export const stableYamlParser = {
  name: "stable-yaml-parser",
  setup(build) {
    // Bundled (not left to node_modules at run time) so that the rewrite applies.
    build.onResolve({ filter: /^js-yaml$/ }, () => ({
      path: fileURLToPath(import.meta.resolve("js-yaml")),
    }));
    build.onLoad({ filter: /[\\/]js-yaml[\\/]dist[\\/]js-yaml\.mjs$/ }, async (args) => {
      const source = await readFile(args.path, "utf8");
      const matches = source.match(SPREAD_STATE)?.length ?? 0;
      if (matches !== 1) {
        throw new Error(
          `${args.path}: expected the parser state spread once, found it ${matches} times; ` +
            "check whether this js-yaml still needs scripts/stable-yaml-parser.mjs",
        );
      }
      return { contents: source.replace(SPREAD_STATE, LITERAL_STATE), loader: "js" };
    });
  },
};

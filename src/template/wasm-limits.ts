/**
 * Bounds the memory of MiniJinja's WebAssembly before it is instantiated (jinja.ts imports this
 * first). Templates come from graph files, which are untrusted: `{{ 'x' * 1000000000 }}` would
 * otherwise take gigabytes, in one step no fuel limit can stop. With the cap, such a step fails (a
 * WebAssembly trap) and the template is reported as too large.
 */
import { setFlagsFromString } from "node:v8";

/** Memory a template may use while it is compiled or rendered. */
export const TEMPLATE_MEMORY_MB = 256;

// A WebAssembly page is 64 KiB.
setFlagsFromString(`--wasm-max-mem-pages=${(TEMPLATE_MEMORY_MB * 1024 * 1024) / 65536}`);

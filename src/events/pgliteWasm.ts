// PGlite's WebAssembly module (PostgreSQL), compiled once per process for baseline code only, and shared by every store.
//
// Requirements:
// - One compile per process: every store of the process (and the image build) instantiates the same module.
// - Baseline code only (V8's Liftoff compiler): opening a store runs thousands of PostgreSQL functions a
//   few times each, and V8's default then recompiles the warm ones with its optimizing compiler on
//   background threads: ~0.5 s of CPU and ~70 MB of peak RSS per process, more than the open itself.
//   The price is paid later: a steady stream of appends costs ~15% more CPU each (a store's appends
//   are far apart in an agent's life: model calls take seconds).
// - Validation when a function is first compiled (`--wasm-lazy-validation`), not all 8.7 MB up front:
//   the compile took ~60 ms of CPU, ~15 ms so; the module is the one PGlite ships, not foreign input.
// - Only this module: V8 reads these flags when it compiles a module, so they are set around
//   this one synchronous compile and put back at once; other WebAssembly of the embedding process keeps
//   V8's default, and no other code runs while the flags are set.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import v8 from "node:v8";
import type { PGliteOptions } from "@electric-sql/pglite";

type WasmModule = NonNullable<PGliteOptions["pgliteWasmModule"]>;
// The compile target is ES2023 without the DOM library, which is where TypeScript declares WebAssembly's values.
const { WebAssembly } = globalThis as unknown as { WebAssembly: { Module: new (bytes: Uint8Array) => WasmModule } };

let compiled: WasmModule | undefined;

/** Where the package keeps `pglite.wasm` (beside its entry; the file is not among the package's exports). */
const wasmPath = (): string =>
  path.join(path.dirname(createRequire(import.meta.url).resolve("@electric-sql/pglite")), "pglite.wasm");

/** V8 flags read when a module is compiled: baseline code only, and each function validated when first compiled. */
const COMPILE_FLAGS = ["--liftoff-only", "--wasm-lazy-validation"];

/** The flags this process was started with (those stay on). */
const startedWith = (flag: string): boolean =>
  [...process.execArgv, ...(process.env["NODE_OPTIONS"] ?? "").split(/\s+/)].includes(flag);

/** PGlite's WebAssembly module, for its `pgliteWasmModule` option. */
export const pgliteWasmModule = (): WasmModule => {
  if (compiled !== undefined) return compiled;
  const bytes = fs.readFileSync(wasmPath());
  const restore = COMPILE_FLAGS.filter((flag) => !startedWith(flag));
  for (const flag of COMPILE_FLAGS) v8.setFlagsFromString(flag);
  try {
    compiled = new WebAssembly.Module(bytes);
    return compiled;
  } finally {
    for (const flag of restore) v8.setFlagsFromString(flag.replace(/^--/, "--no-"));
  }
};

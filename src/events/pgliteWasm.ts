// PGlite's WebAssembly module (PostgreSQL), compiled once per process for baseline code only, and shared by every store.
//
// Requirements:
// - One compile per process: every store of the process (and the image build) instantiates the same module.
// - Baseline code only (V8's Liftoff compiler): opening a store runs thousands of PostgreSQL functions a
//   few times each, and V8's default then recompiles the warm ones with its optimizing compiler on
//   background threads: ~0.5 s of CPU and ~70 MB of peak RSS per process, more than the open itself, and
//   a 20,000-query run was no faster for it (the log's statements are short; their time is PostgreSQL's
//   bookkeeping and the calls across the JS/WebAssembly border, not tight loops).
// - Only this module: V8 reads `--liftoff-only` when it compiles a module, so the flag is set around
//   this one synchronous compile and put back at once; other WebAssembly of the embedding process keeps
//   V8's default, and no other code runs while the flag is set.
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
const wasmPath = (): string => path.join(path.dirname(createRequire(import.meta.url).resolve("@electric-sql/pglite")), "pglite.wasm");

/** Whether this process was started with `--liftoff-only` (then it stays on). */
const liftoffOnlyAlready = (): boolean => [...process.execArgv, ...(process.env["NODE_OPTIONS"] ?? "").split(/\s+/)].includes("--liftoff-only");

/** PGlite's WebAssembly module, for its `pgliteWasmModule` option. */
export const pgliteWasmModule = (): WasmModule => {
  if (compiled !== undefined) return compiled;
  const bytes = fs.readFileSync(wasmPath());
  const restore = !liftoffOnlyAlready();
  v8.setFlagsFromString("--liftoff-only");
  try {
    compiled = new WebAssembly.Module(bytes);
    return compiled;
  } finally {
    if (restore) v8.setFlagsFromString("--no-liftoff-only");
  }
};

#!/usr/bin/env node
// The `actorzero` command. Installed from the package, it runs the compiled CLI (dist/cli/main.js) in this
// process with no loader. In a clone (src/ is present, and never shipped) it runs the TypeScript sources
// through tsx, as `npm start` does, so it never runs a stale build.
import { existsSync } from "node:fs";
import module from "node:module";

// Node's on-disk compile cache (in the OS temp dir): later starts skip compiling the CLI's modules again.
module.enableCompileCache?.();

process.env.ACTORZERO_INVOKED_AS ??= "npx actorzero";
const source = new URL("../src/cli/main.ts", import.meta.url);
let main;
if (existsSync(source)) {
  const { register } = await import("tsx/esm/api");
  register();
  main = await import(source.href);
} else {
  main = await import(new URL("../dist/cli/main.js", import.meta.url).href);
}
await main.runCli();

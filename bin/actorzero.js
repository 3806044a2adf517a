#!/usr/bin/env node
// The `actorzero` command: runs the compiled CLI (dist/cli/main.js) in this process, with no loader.
// In a clone that has not been built (`npm run build`), it runs the TypeScript sources through tsx instead.
import { existsSync } from "node:fs";

process.env.ACTORZERO_INVOKED_AS ??= "npx actorzero";
const built = new URL("../dist/cli/main.js", import.meta.url);
let main;
if (existsSync(built)) main = await import(built.href);
else {
  const { register } = await import("tsx/esm/api");
  register();
  main = await import(new URL("../src/cli/main.ts", import.meta.url).href);
}
await main.runCli();

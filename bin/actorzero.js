#!/usr/bin/env node
// The `actorzero` command: runs the TypeScript CLI (src/cli/main.ts) through tsx, in this process; no build step.
import { register } from "tsx/esm/api";

register();
process.env.ACTORZERO_INVOKED_AS ??= "npx actorzero";
const { runCli } = await import("../src/cli/main.ts");
await runCli();

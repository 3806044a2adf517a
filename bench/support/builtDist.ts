// The package as an installed user runs it: `dist/`, built once per bench process from the current sources.
import { spawnSync } from "node:child_process";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..", "..");
let built = false;

/** Builds dist/ (`npm run build`'s compiler run) the first time it is asked for; returns the repository root. */
export const builtDist = (): string => {
  if (!built) {
    const tsc = path.join(root, "node_modules", ".bin", "tsc");
    const r = spawnSync(tsc, ["-p", "tsconfig.build.json"], { cwd: root, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`building dist/ failed (${r.status}): ${(r.stdout + r.stderr).slice(-2000)}`);
    built = true;
  }
  return root;
};

/** The built CLI's entry, as bin/actorzero.js loads it in an installed package. */
export const builtCli = (): string => path.join(builtDist(), "dist", "cli", "main.js");

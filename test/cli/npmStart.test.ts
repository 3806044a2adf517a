// Ctrl-C under `npm start`, as a terminal sends it: SIGINT to the whole process group (npm, and the CLI under it,
// which npm also forwards it to). One press must stop the tree and still print the final report, every time.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { cliEnv } from "./support.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await removeDir(d);
});

/** `npm start -- run …` in a process group of its own; one SIGINT to the group once the root's model is called. */
const pressCtrlC = async () => {
  const dataDir = await copyPgliteTemplate();
  dirs.push(dataDir);
  const child = spawn(
    "npm",
    [
      "start",
      "--silent",
      "--",
      "run",
      "--events",
      "--latency",
      "3000",
      "--data-dir",
      dataDir,
      "Write a haiku about logs",
    ],
    {
      cwd: ROOT,
      env: cliEnv(),
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stdout = "";
  let stderr = "";
  let pressed = false;
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
    if (!pressed && / A0 default .* ModelCalled /.test(stdout)) {
      pressed = true;
      process.kill(-child.pid!, "SIGINT");
    }
  });
  const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
  return { code, stdout, stderr, pressed };
};

describe("given the demo under npm start", () => {
  it(
    "when Ctrl-C is pressed once, then the tree is stopped and the final report printed, on every try",
    { timeout: 300_000 },
    async () => {
      const tries = await Promise.all([pressCtrlC(), pressCtrlC(), pressCtrlC()]);
      for (const t of tries) {
        expect(t.pressed, t.stdout + t.stderr).toBe(true);
        expect(t.stderr).not.toMatch(/exiting at once/);
        expect(t.stdout).toMatch(/^Stopped: A0 default /m);
        expect(t.stdout).toMatch(/^Look further$/m);
      }
    },
  );
});

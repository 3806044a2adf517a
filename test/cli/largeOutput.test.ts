// Output larger than a pipe holds reaches the reader whole: the command exits only once stdout is flushed.
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asRunId } from "../../src/events/ids.ts";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import type { NewEvent } from "../../src/events/schema.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { MAIN, TSX, cliEnv, jsonLines } from "./support.ts";

const COUNT = 400;
let dataDir: string;

beforeAll(async () => {
  dataDir = await copyPgliteTemplate();
  const store = await openPgliteStore({ dataDir });
  // 400 events of ~1 KB each: several times what a pipe buffers (64 KB on Linux).
  const events: NewEvent[] = Array.from({ length: COUNT }, (_, i) => ({
    type: "MessageReceived",
    data: { runId: asRunId("run-1"), text: `message ${i} ${"x".repeat(1000)}`, sender: "user" },
  }));
  await store.append(randomUUID(), events, { expectedVersion: "no_stream" });
  await store.close();
});
afterAll(async () => {
  await removeDir(dataDir);
});

describe("when events --json prints more than a pipe holds", () => {
  it("prints every event before it exits, also into a shell pipe", async () => {
    // A shell pipe (`| cat`) is an OS pipe that fills at 64 KB, as in `actorzero events --json | jq`;
    // a reader in this process would drain it too fast to show the loss.
    const command = `"${process.execPath}" --import "${TSX}" "${MAIN}" events --json --data-dir "${dataDir}" | cat`;
    const { stdout } = await promisify(execFile)("bash", ["-o", "pipefail", "-c", command], {
      env: cliEnv(),
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(stdout.length).toBeGreaterThan(4 * 65_536);
    expect(jsonLines<{ position: number }>(stdout).map((e) => e.position)).toEqual(
      Array.from({ length: COUNT }, (_, i) => i + 1),
    );
  });
});

import { spawn } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { scriptedModel } from "../../src/models/scripted.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await removeDir(d);
});

describe("when the process is killed with SIGKILL mid-run and recovery is 'interrupt'", () => {
  it("marks the unfinished runs interrupted on reopen, loses nothing acknowledged, and runs the next message", async () => {
    const dataDir = await copyPgliteTemplate();
    dirs.push(dataDir);
    const child = spawn(
      process.execPath,
      ["--import", "tsx", new URL("./crashChild.ts", import.meta.url).pathname, dataDir],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    const acked: number[] = [];
    const rootId = await new Promise<string>((resolve, reject) => {
      let buf = "";
      child.stdout.on("data", (d: Buffer) => {
        buf += d.toString();
        for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (line.startsWith("ack ")) acked.push(Number(line.split(" ")[1]));
          if (line.startsWith("ready ")) resolve(line.slice(6));
        }
      });
      child.on("exit", (code) => reject(new Error(`child exited early with ${code}`)));
    });
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));

    const store = await openPgliteStore({ dataDir });
    const rt = await createRuntime({
      store,
      model: scriptedModel(() => ({ text: "back on my feet" })),
      recovery: "interrupt",
    });
    const positions = (await rt.events({ limit: 10_000 })).map((e) => e.globalPosition);
    for (const p of acked) expect(positions).toContain(p);

    const contexts = await rt.contexts();
    expect(contexts).toHaveLength(2);
    for (const c of contexts) {
      expect(c.status).toBe("failed");
      expect(c.failure?.reason).toBe("interrupted");
      const last = (await rt.events({ contextId: c.id })).at(-1)!;
      expect(last.type).toBe("RunInterrupted");
    }
    const r = await rt.send(rootId, "try again");
    expect(r).toMatchObject({ status: "completed", response: "back on my feet" });
    await rt.close();
    await store.close();
  });
});

// Starts test/events/storeChild.ts in its own process and reads its output line by line.
import { type ChildProcess, spawn } from "node:child_process";

export type Child = {
  process: ChildProcess;
  lines: string[];
  /** Resolves with the first output line (seen before or after the call) that matches. */
  waitFor(match: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
};

export const startStoreChild = (mode: "append" | "hold", dataDir: string): Child => {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", new URL("./storeChild.ts", import.meta.url).pathname, mode, dataDir],
    {
      stdio: ["pipe", "pipe", "inherit"],
    },
  );
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  let buffer = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let i = buffer.indexOf("\n"); i >= 0; i = buffer.indexOf("\n")) {
      lines.push(buffer.slice(0, i));
      buffer = buffer.slice(i + 1);
    }
    for (const w of waiters) w();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const waitFor = (match: (line: string) => boolean, timeoutMs = 60_000) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const line = lines.find(match);
        if (line === undefined) return;
        done();
        resolve(line);
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new Error(`child (${mode}) printed no matching line in ${timeoutMs} ms; got: ${lines.slice(-3).join(" | ")}`),
        );
      }, timeoutMs);
      const onExit = () => {
        done();
        reject(
          new Error(`child (${mode}) exited before printing a matching line; got: ${lines.slice(-3).join(" | ")}`),
        );
      };
      const done = () => {
        clearTimeout(timer);
        waiters.delete(check);
        child.off("exit", onExit);
      };
      waiters.add(check);
      child.once("exit", onExit);
      check();
    });
  return { process: child, lines, waitFor, exited };
};

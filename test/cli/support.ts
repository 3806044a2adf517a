// Runs the actorzero CLI as a separate process, the way a user does: `node --import tsx src/cli/main.ts …`.
import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";

export const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
/** tsx's loader by absolute URL, so the CLI also starts from a directory outside the project. */
export const TSX = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

export type CliResult = { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string };

export type CliProcess = {
  child: ChildProcess;
  /** Resolves with the first stdout line matching `pattern`, printed already or to come. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  done: Promise<CliResult>;
};

/** The environment of a user with no API key and no colours. */
export const cliEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1", ...extra };
  delete env["OPENAI_API_KEY"];
  delete env["ACTORZERO_DEBUG"];
  return env;
};

export const startCli = (args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): CliProcess => {
  const child = spawn(process.execPath, ["--import", TSX, MAIN, ...args], {
    cwd: options.cwd ?? process.cwd(),
    env: options.env ?? cliEnv(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  const lines: string[] = [];
  let partial = "";
  child.stdout!.on("data", (d: Buffer) => {
    stdout += d.toString();
    partial += d.toString();
    let i: number;
    while ((i = partial.indexOf("\n")) >= 0) {
      const line = partial.slice(0, i);
      partial = partial.slice(i + 1);
      lines.push(line);
      for (const w of [...waiters]) {
        if (w.pattern.test(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    }
  });
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<CliResult>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return {
    child,
    done,
    waitForLine: (pattern, timeoutMs = 60_000) =>
      new Promise<string>((resolve, reject) => {
        const seen = lines.find((l) => pattern.test(l));
        if (seen !== undefined) return resolve(seen);
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `no line matching ${pattern} within ${timeoutMs} ms; stdout so far:\n${stdout}\nstderr:\n${stderr}`,
              ),
            ),
          timeoutMs,
        );
        waiters.push({
          pattern,
          resolve: (line) => {
            clearTimeout(timer);
            resolve(line);
          },
        });
        void done.then(() => {
          clearTimeout(timer);
          reject(new Error(`the CLI exited before a line matching ${pattern}; stdout:\n${stdout}\nstderr:\n${stderr}`));
        });
      }),
  };
};

export const cli = (args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> =>
  startCli(args, options).done;

/** The positions printed by `run --events` / `events` lines (`   12  10:42:01.123  A0 default …`). */
export const linePositions = (stdout: string): number[] =>
  stdout
    .split("\n")
    .map((l) => /^\s*(\d+)\s{2}\d\d:\d\d:\d\d\.\d{3}\s{2}/.exec(l)?.[1])
    .filter((p): p is string => p !== undefined)
    .map(Number);

export const jsonLines = <T = Record<string, unknown>>(stdout: string): T[] =>
  stdout
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as T);

/** A user error is one line on stderr, never a stack trace. */
export const expectOneLineError = (r: CliResult): string => {
  const lines = r.stderr.trim().split("\n");
  if (lines.length !== 1 || /\n\s+at /.test(r.stderr) || !lines[0]!.startsWith("actorzero: ")) {
    throw new Error(`expected one error line, got:\n${r.stderr}`);
  }
  return lines[0]!;
};

/** How many events the PGlite log in `dataDir` holds (opened and closed around the read: no process may hold it). */
export const logLength = async (dataDir: string): Promise<number> => {
  const store = await openPgliteStore({ dataDir });
  try {
    return (await store.readAll()).length;
  } finally {
    await store.close();
  }
};

// The CLI on a real pseudo-terminal of a given size (python3's pty module: no native module needed),
// and a screen that applies what it printed, so a test reads what a person would see.
import { spawn } from "node:child_process";
import { cliEnv, MAIN, TSX, type CliResult } from "./support.ts";

/**
 * Forks the command onto a new pseudo-terminal (its controlling terminal, so a typed Ctrl-C is a
 * SIGINT from the line discipline, as at a real keyboard), copies our stdin to the terminal and the
 * terminal to our stdout, and exits with the command's status (128 + signal when it was killed).
 */
const PTY_PY = `
import os, pty, select, signal, struct, sys, fcntl, termios
cols, rows = int(sys.argv[1]), int(sys.argv[2])
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    os.execvp(sys.argv[3], sys.argv[3:])
inputs = [fd, 0]
while True:
    ready, _, _ = select.select(inputs, [], [])
    if 0 in ready:
        data = os.read(0, 1024)
        if data: os.write(fd, data)
        else: inputs.remove(0)
    if fd in ready:
        try: data = os.read(fd, 65536)
        except OSError: data = b""
        if not data: break
        os.write(1, data)
_, status = os.waitpid(pid, 0)
sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
`;

export type TerminalRun = {
  /** Types `text` at the terminal's keyboard ("\x03" is Ctrl-C). */
  type(text: string): void;
  /** Resolves once the output so far satisfies `test`. */
  waitFor(test: (output: string) => boolean, timeoutMs?: number): Promise<string>;
  done: Promise<CliResult>;
};

/** Runs `actorzero args` on a `columns`×`rows` pseudo-terminal; `stdout` of the result is everything the terminal showed. */
export const runInTerminal = (
  args: string[],
  size: { columns: number; rows: number },
  options: { cwd?: string } = {},
): TerminalRun => {
  const env = cliEnv({ TERM: "xterm" });
  delete env["COLUMNS"];
  delete env["LINES"];
  const child = spawn(
    "python3",
    ["-c", PTY_PY, String(size.columns), String(size.rows), process.execPath, "--import", TSX, MAIN, ...args],
    {
      env,
      ...(options.cwd ? { cwd: options.cwd } : {}),
      stdio: ["pipe", "pipe", "pipe"],
    },
  );
  let output = "";
  let stderr = "";
  const waiters: { test: (o: string) => boolean; resolve: (o: string) => void }[] = [];
  child.stdout.on("data", (d: Buffer) => {
    output += d.toString();
    for (const w of [...waiters]) if (w.test(output)) waiters.splice(waiters.indexOf(w), 1) && w.resolve(output);
  });
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<CliResult>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal, stdout: output, stderr })),
  );
  return {
    type: (text) => child.stdin.write(text),
    waitFor: (test, timeoutMs = 90_000) =>
      new Promise((resolve, reject) => {
        if (test(output)) return resolve(output);
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `the terminal did not show what was awaited in ${timeoutMs} ms; it showed:\n${screenOf(output).join("\n")}\n${stderr}`,
              ),
            ),
          timeoutMs,
        );
        waiters.push({ test, resolve: (o) => (clearTimeout(timer), resolve(o)) });
        void done.then(() => {
          clearTimeout(timer);
          if (waiters.some((w) => w.test === test))
            reject(
              new Error(
                `the command ended before the terminal showed what was awaited:\n${screenOf(output).join("\n")}\n${stderr}`,
              ),
            );
        });
      }),
    done,
  };
};

/**
 * The lines a terminal shows after `output`: applies the escapes the CLI uses (cursor up to column 1,
 * clear line, clear down; colours and cursor visibility are ignored), keeping lines that scrolled away.
 * A line longer than the terminal is kept whole, so a test can see that it would have wrapped.
 */
export const screenOf = (output: string): string[] => {
  const lines: string[][] = [[]];
  let row = 0;
  let col = 0;
  for (let i = 0; i < output.length; i++) {
    const ch = output[i]!;
    if (ch === "\x1b") {
      const m = /^\x1b\[([0-9;?]*)([A-Za-z])/.exec(output.slice(i, i + 16));
      if (!m) continue;
      i += m[0].length - 1;
      const n = Number(m[1] || "0");
      if (m[2] === "F") ((row = Math.max(0, row - Math.max(1, n))), (col = 0));
      else if (m[2] === "K" && n === 2) lines[row] = [];
      else if (m[2] === "J" && n === 0) ((lines[row] = lines[row]!.slice(0, col)), lines.splice(row + 1));
      continue;
    }
    if (ch === "\r") col = 0;
    else if (ch === "\n") {
      row += 1;
      lines[row] ??= [];
    } else {
      const line = (lines[row] ??= []);
      while (line.length < col) line.push(" ");
      line[col] = ch;
      col += 1;
    }
  }
  return lines.map((l) => l.join("").trimEnd());
};

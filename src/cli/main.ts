// The `actorzero` command line: picks the command, parses its flags, runs it, and turns every failure into one line.
import { redactSecrets } from "../events/redact.ts";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { paintFor } from "./ansi.ts";
import type { Io } from "./context.ts";
import { describeFailure, EXIT, usageError } from "./errors.ts";
import { helpText, parseCommand, type CommandSpec } from "./flags.ts";
import { auditCommand, auditSpec } from "./commands/audit.ts";
import { contextsCommand, contextsSpec } from "./commands/contexts.ts";
import { eventsCommand, eventsSpec } from "./commands/events.ts";
import { replayCommand, replaySpec } from "./commands/replay.ts";
import { runCommand, runSpec } from "./commands/run.ts";
import { sendCommand, sendSpec } from "./commands/send.ts";
import { serveCommand, serveSpec } from "./commands/serve.ts";
import { stopCommand, stopSpec } from "./commands/stop.ts";
import { treeCommand, treeSpec } from "./commands/tree.ts";

type Command = { spec: CommandSpec<any>; run: (value: any, io: Io, invokedAs: string) => Promise<number> };

const COMMANDS: Record<string, Command> = {
  run: { spec: runSpec, run: runCommand },
  contexts: { spec: contextsSpec, run: contextsCommand },
  tree: { spec: treeSpec, run: treeCommand },
  audit: { spec: auditSpec, run: auditCommand },
  events: { spec: eventsSpec, run: eventsCommand },
  replay: { spec: replaySpec, run: replayCommand },
  send: { spec: sendSpec, run: sendCommand },
  stop: { spec: stopSpec, run: stopCommand },
  serve: { spec: serveSpec, run: serveCommand },
};

const overview = (): string => {
  const names = Object.keys(COMMANDS);
  const w = Math.max(...names.map((n) => n.length));
  return [
    "actorzero: run hierarchical LLM agents on an append-only event log; watch, audit and replay them.",
    "",
    "Usage: actorzero <command> [options]     (no command: the offline demo, `actorzero run`)",
    "",
    "Commands:",
    ...names.map((n) => `  ${n.padEnd(w)}  ${COMMANDS[n]!.spec.summary}`),
    "",
    "Every command takes --help, and --data-dir <dir> (default ./.actorzero) or --store postgres://…; run and serve also take --store memory.",
    "",
  ].join("\n");
};

export const main = async (argv: readonly string[], io: Io): Promise<number> => {
  const invokedAs = io.env["ACTORZERO_INVOKED_AS"] ?? "npx actorzero";
  try {
    const [first, ...rest] = argv;
    if (first === undefined) return await runCommand(parseValue(runSpec, []), io, invokedAs);
    if (first === "--help" || first === "-h" || first === "help") {
      const topic = first === "help" ? rest[0] : undefined;
      io.out.write(topic && COMMANDS[topic] ? helpText(COMMANDS[topic].spec) : overview());
      return EXIT.ok;
    }
    if (first === "--version") {
      io.print("actorzero 0.1.0");
      return EXIT.ok;
    }
    const command = COMMANDS[first];
    if (!command) {
      if (first.startsWith("-")) throw usageError(`unknown option ${first} before the command (options go after it, e.g. actorzero run --offline)`);
      throw usageError(`unknown command '${first}'; commands: ${Object.keys(COMMANDS).join(", ")} (see actorzero --help)`);
    }
    const parsed = parseCommand(command.spec, rest);
    if (parsed.help) {
      io.out.write(helpText(command.spec));
      return EXIT.ok;
    }
    return await command.run(parsed.value, io, invokedAs);
  } catch (e) {
    const { line, exitCode, expected } = describeFailure(e);
    io.warn(`actorzero: ${line}`);
    if ((!expected || io.env["ACTORZERO_DEBUG"]) && e instanceof Error && io.env["ACTORZERO_DEBUG"]) io.warn(e.stack ?? "");
    return exitCode;
  }
};

const parseValue = <V>(spec: CommandSpec<V>, argv: string[]): V => {
  const parsed = parseCommand(spec, argv);
  if (parsed.help) throw new Error("unreachable");
  return parsed.value;
};

/** A reader that went away (`| head`) ends our output, not the command: a run goes on and is recorded. */
let outputClosed = false;
process.stdout.on("error", (e: NodeJS.ErrnoException) => {
  if (e.code === "EPIPE") outputClosed = true;
  else throw e;
});

const processIo = (): Io => ({
  out: process.stdout,
  err: process.stderr,
  paint: paintFor(process.stdout),
  env: process.env,
  cwd: process.cwd(),
  print: (line = "") => {
    // Every line out passes the one redaction: no banner, suggestion or error prints a credential.
    if (!outputClosed) process.stdout.write(redactSecrets(line) + "\n");
  },
  warn: (line) => process.stderr.write(paintFor(process.stderr).red(redactSecrets(line)) + "\n"),
});

/** Runs the command line of this process and exits with its status. */
export const runCli = async (): Promise<never> => {
  const code = await main(process.argv.slice(2), processIo());
  // Writes to a pipe are asynchronous: exiting at once drops what the reader has not taken yet
  // (`events --json` read by a slow consumer lost its last lines), so wait until both are flushed.
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(code);
};

/** Resolves once every write queued on `stream` so far has been handed to the OS (at once when none is). */
const flushed = (stream: NodeJS.WriteStream): Promise<void> =>
  new Promise((resolve) => {
    if (stream.writableLength === 0 || stream.destroyed) resolve();
    else stream.write("", () => resolve());
  });

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await runCli();

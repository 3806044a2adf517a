// The `actorzero` command line: picks the command, parses its flags, runs it, and turns every failure into one line.
import { redactSecrets } from "../events/redact.ts";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { paintFor } from "./ansi.ts";
import type { Io } from "./context.ts";
import { describeFailure, EXIT, usageError } from "./errors.ts";
import { helpText, parseCommand, type CommandSpec } from "./flags.ts";
import { screenWidth, wrapText } from "./screen.ts";

type Command = { spec: CommandSpec<any>; run: (value: any, io: Io, invokedAs: string) => Promise<number> };

/**
 * Every command, loaded only when it is the one asked for: a read-only command never pays for the
 * runtime, the model client or the server. Adding a command is one line here.
 */
const COMMANDS: Record<string, () => Promise<Command>> = {
  run: () => import("./commands/run.ts").then((m) => ({ spec: m.runSpec, run: m.runCommand })),
  contexts: () => import("./commands/contexts.ts").then((m) => ({ spec: m.contextsSpec, run: m.contextsCommand })),
  tree: () => import("./commands/tree.ts").then((m) => ({ spec: m.treeSpec, run: m.treeCommand })),
  audit: () => import("./commands/audit.ts").then((m) => ({ spec: m.auditSpec, run: m.auditCommand })),
  events: () => import("./commands/events.ts").then((m) => ({ spec: m.eventsSpec, run: m.eventsCommand })),
  replay: () => import("./commands/replay.ts").then((m) => ({ spec: m.replaySpec, run: m.replayCommand })),
  send: () => import("./commands/send.ts").then((m) => ({ spec: m.sendSpec, run: m.sendCommand })),
  stop: () => import("./commands/stop.ts").then((m) => ({ spec: m.stopSpec, run: m.stopCommand })),
  pause: () => import("./commands/pause.ts").then((m) => ({ spec: m.pauseSpec, run: m.pauseCommand })),
  resume: () => import("./commands/pause.ts").then((m) => ({ spec: m.resumeSpec, run: m.resumeCommand })),
  serve: () => import("./commands/serve.ts").then((m) => ({ spec: m.serveSpec, run: m.serveCommand })),
  mcp: () => import("./commands/mcp.ts").then((m) => ({ spec: m.mcpSpec, run: m.mcpCommand })),
  "verify-log": () =>
    import("./commands/verifyLog.ts").then((m) => ({ spec: m.verifyLogSpec, run: m.verifyLogCommand })),
  approvals: () => import("./commands/approvals.ts").then((m) => ({ spec: m.approvalsSpec, run: m.approvalsCommand })),
  approve: () => import("./commands/approve.ts").then((m) => ({ spec: m.approveSpec, run: m.approveCommand })),
  reject: () => import("./commands/approve.ts").then((m) => ({ spec: m.rejectSpec, run: m.rejectCommand })),
  "extend-budget": () =>
    import("./commands/extendBudget.ts").then((m) => ({ spec: m.extendBudgetSpec, run: m.extendBudgetCommand })),
  fork: () => import("./commands/fork.ts").then((m) => ({ spec: m.forkSpec, run: m.forkCommand })),
  "export-fixture": () =>
    import("./commands/exportFixture.ts").then((m) => ({ spec: m.exportFixtureSpec, run: m.exportFixtureCommand })),
  "replay-run": () =>
    import("./commands/replayRun.ts").then((m) => ({ spec: m.replayRunSpec, run: m.replayRunCommand })),
  "check-fixtures": () =>
    import("./commands/checkFixtures.ts").then((m) => ({ spec: m.checkFixturesSpec, run: m.checkFixturesCommand })),
};

const commandNamed = (name: string | undefined) =>
  name !== undefined && Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;

/** The command list with each one's summary: the only path that loads every command. */
const overview = async (width: number): Promise<string> => {
  const names = Object.keys(COMMANDS);
  const specs = await Promise.all(names.map(async (n) => (await COMMANDS[n]!()).spec));
  const w = Math.max(...names.map((n) => n.length));
  return [
    "actorzero: run hierarchical LLM agents on an append-only event log; watch, audit and replay them.",
    "",
    "Usage: actorzero <command> [options]     (no command: the offline demo, `actorzero run`)",
    "",
    "Commands:",
    ...names.map((n, i) => wrapText(`  ${n.padEnd(w)}  ${specs[i]!.summary}`, width, " ".repeat(w + 4))),
    "",
    wrapText(
      "Every command takes --help, and --data-dir <dir> (default ./.actorzero) or --store postgres://…; run and serve also take --store memory.",
      width,
      "",
    ),
    "",
  ]
    .map((l) => wrapText(l, width, ""))
    .join("\n");
};

export const main = async (argv: readonly string[], io: Io): Promise<number> => {
  const invokedAs = io.env["ACTORZERO_INVOKED_AS"] ?? "npx actorzero";
  try {
    const [first, ...rest] = argv;
    if (first === undefined) {
      const run = await COMMANDS["run"]!();
      return await run.run(parseValue(run.spec, []), io, invokedAs);
    }
    if (first === "--help" || first === "-h" || first === "help") {
      const topic = first === "help" ? rest[0] : undefined;
      const load = commandNamed(topic);
      io.out.write(load ? helpText((await load()).spec, screenWidth(io.out)) : await overview(screenWidth(io.out)));
      return EXIT.ok;
    }
    if (first === "--version") {
      io.print("actorzero 0.1.0");
      return EXIT.ok;
    }
    const load = commandNamed(first);
    if (!load) {
      if (first.startsWith("-"))
        throw usageError(
          `unknown option ${first} before the command (options go after it, e.g. actorzero run --offline)`,
        );
      throw usageError(
        `unknown command '${first}'; commands: ${Object.keys(COMMANDS).join(", ")} (see actorzero --help)`,
      );
    }
    const command = await load();
    (await import("./config.ts")).noteConfigSecrets(io.cwd);
    const parsed = parseCommand(command.spec, rest);
    if (parsed.help) {
      io.out.write(helpText(command.spec, screenWidth(io.out)));
      return EXIT.ok;
    }
    return await command.run(parsed.value, io, invokedAs);
  } catch (e) {
    const { line, exitCode, expected } = describeFailure(e);
    io.warn(`actorzero: ${line}`);
    if ((!expected || io.env["ACTORZERO_DEBUG"]) && e instanceof Error && io.env["ACTORZERO_DEBUG"])
      io.warn(e.stack ?? "");
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

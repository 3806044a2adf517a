// `actorzero run "<task>"`: a new root context (A0) runs the task; its tree is shown live, then audited.
import { screenWidth, wrapText } from "../screen.ts";
import { loadConfig } from "../config.ts";
import type { Io } from "../context.ts";
import { usageError } from "../errors.ts";
import { defineCommand, JSON_FLAG, RUN_STORE_FLAGS, textFlag, type ValuesOf } from "../defineCommand.ts";
import { MODEL_FLAGS } from "../modelFlags.ts";
import { chooseModel } from "../modelChoice.ts";
import { locate, openLog } from "../openLog.ts";
import { printBanner, runHere } from "../runHere.ts";
import type { ShowMode } from "../runSession.ts";
import { checkRuntimeFor } from "../runtimeFor.ts";
import { oneLine } from "../format.ts";
import { BUDGET_SYNTAX, budgetFlag } from "../budgetText.ts";

export const DEMO_TASK = "Plan the launch of a small open-source note-taking app";

export const runSpec = defineCommand({
  name: "run",
  summary: "Run a task on a new root context (A0) and watch its delegation tree live.",
  usage: [
    'run "<task>" [--profile <p>] [--budget <limits>] [--model <m>] [--base-url <url>] [--offline] [--events] [--json]',
    "run            (the bundled demo task, offline)",
  ],
  args: [{ name: "<task>", optional: true }],
  flags: {
    ...RUN_STORE_FLAGS,
    profile: textFlag(
      "<profile>",
      "the root's profile: default, developer, researcher, or one of yours",
      "--profile needs a profile name",
    ),
    name: textFlag("<name>", "the root context's name (default: A0)", "--name needs a name"),
    budget: {
      type: "string",
      value: "<limits>",
      description: `what the whole tree may spend: ${BUDGET_SYNTAX}; keys inputTokens, outputTokens, totalTokens, costUsd, modelCalls, toolCalls, wallClockMs (default: the project's or profile's budget)`,
      schema: budgetFlag("--budget").optional(),
    },
    ...MODEL_FLAGS,
    ...JSON_FLAG,
  },
  details: `Without OPENAI_API_KEY (or with --offline) the offline demo model runs: a deterministic script over
the real tools. A0 calls \`parallel\` with two \`call_subordinate\` jobs (a researcher A1, which delegates a
sub-question to its own A2, and a developer A1), then composes their answers.

On a terminal the tree is redrawn in place; otherwise (or with --events) one line is printed per event.
Ctrl-C stops the whole tree (recorded as stopped, nothing lost); a second Ctrl-C exits at once.
With --budget, a run whose next model call would pass the tree's budget parks (it is not failed): the command
waits, and another terminal lets it go on with actorzero extend-budget <root> <limits> (or stops it).
--json prints one JSON object at the end: { contextId, runId, status, response, failure, audit }.
With --events --json, every event is printed as a JSON line instead (the shape of \`events --json\`).

Exit status: 0 completed, 1 failed, 130 stopped by Ctrl-C.`,
});
type Values = ValuesOf<typeof runSpec>;

export const runCommand = async (v: Values, io: Io, command: string): Promise<number> => {
  const where = locate(v, "run");
  const config = loadConfig(io.cwd);
  const demoTask = v.positionals["<task>"] === undefined;
  const task = v.positionals["<task>"] ?? DEMO_TASK;
  if (task.trim() === "") throw usageError("the task is empty: say what to do", "run");
  const demoReason = v.offline
    ? "--offline"
    : io.env["OPENAI_API_KEY"]
      ? "the demo task always runs offline"
      : "OPENAI_API_KEY is not set";
  const choice = await chooseModel(demoTask ? { ...v, offline: demoReason } : v, config, io.env);
  await checkRuntimeFor(config, choice, v.profile !== undefined ? { profile: v.profile } : {});
  const mode: ShowMode = v.json ? (v.events ? "json-lines" : "quiet") : v.events || !io.out.isTTY ? "lines" : "live";
  // The banner goes first: opening the store and loading the runtime take a moment, and the user
  // should see at once that the command started and where its log is.
  if (!v.json) printBanner(io, choice, where);
  const store = await openLog(where, { create: true });
  const o = { config, choice, recovery: v.recovery ?? "resume", where, io, mode, flags: v, command } as const;
  return runHere(store, o, async (rt) => {
    const after = await store.headPosition();
    const root = await rt.createContext({
      ...(v.name ? { name: v.name } : {}),
      ...(v.profile ? { profile: v.profile } : {}),
      ...(v.budget ? { budget: v.budget } : {}),
    });
    if (!v.json) {
      io.print(
        wrapText(
          `${io.paint.bold(`A0 ${root.profile}`)} ${root.id} · task: ${JSON.stringify(oneLine(task, 100))}${demoTask ? io.paint.dim(" (the demo task)") : ""}`,
          screenWidth(io.out),
          "  ",
        ),
      );
      io.print("");
    }
    return { rootId: root.id, after, start: () => rt.send(root.id, task) };
  });
};

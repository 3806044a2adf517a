// `actorzero replay-run <id> --model <preset> | --prompts <dir>`: the same user messages again, with another model
// or prompts, as a new root in the log; a side-by-side report of both runs and where they first differ.
import { readFileSync } from "node:fs";
import path from "node:path";
import { loadConfig } from "../config.ts";
import { resolveContext, type Io } from "../context.ts";
import { CliError, EXIT } from "../errors.ts";
import { defineCommand, booleanFlag, JSON_FLAG, STORE_FLAGS, textFlag, type ValuesOf } from "../defineCommand.ts";
import { demoModel } from "../demoModel.ts";
import { chooseModel } from "../modelChoice.ts";
import { locate, locationFlags, openLog } from "../openLog.ts";
import { runtimeFor } from "../runtimeFor.ts";
import { replayReport, WIDTH, wrap } from "../replayReport.ts";

export const replayRunSpec = defineCommand({
  name: "replay-run",
  summary:
    "Runs a root's user messages again with another model (--model) or prompts (--prompts) and shows both runs side by side.",
  usage: [
    "replay-run <id> --model <preset> [--prompts <dir>] [--fixture <file>] [--offline] [--json]",
    "replay-run <id> --prompts <dir> [...]",
  ],
  args: [{ name: "<id>", id: true }],
  flags: {
    ...STORE_FLAGS,
    model: textFlag(
      "<preset>",
      "the preset (actorzero.config.json, or Default) the new run's root uses",
      "--model needs a preset name",
    ),
    prompts: textFlag(
      "<dir>",
      "a prompts folder (system/, tools/, profiles/) for the new run",
      "--prompts needs a folder",
    ),
    fixture: textFlag(
      "<file>",
      "answer the new run's model calls from this fixture (offline)",
      "--fixture needs a file",
    ),
    offline: booleanFlag("use the offline demo model even when OPENAI_API_KEY is set"),
    ...JSON_FLAG,
  },
  rule: {
    holds: (v) => v.model !== undefined || v.prompts !== undefined,
    message: "replay-run needs --model <preset> or --prompts <dir> (what to run the messages against)",
  },
  details: `The messages the root was sent are sent, in order, to a new root with its name, profile and project, in
the same log (audit it like any run); the recorded run is untouched. The new run's model: the fixture given
with --fixture, else the offline demo model (--offline or no OPENAI_API_KEY), else the endpoint of --model's
preset. The report shows, per context (matched by its path of names), the tool-call sequence, the
delegations, the answers and the tokens of both runs, a * on rows that differ, and the first difference.
--json: { recorded, replay, contexts: [{ path, recorded, replay }], firstDifference, same }.`,
});
type Values = ValuesOf<typeof replayRunSpec>;

export const replayRunCommand = async (v: Values, io: Io): Promise<number> => {
  const where = locate(v, "replay-run");
  const config = loadConfig(io.cwd);
  const promptsDir = v.prompts === undefined ? undefined : path.resolve(io.cwd, v.prompts);
  const { parseFixture } = await import("../../fixtures/format.ts");
  const answers =
    v.fixture === undefined ? null : readFixture(path.resolve(io.cwd, v.fixture), v.fixture, parseFixture);
  const choice = await chooseModel({ offline: v.offline === true || answers !== null, latency: 0 }, config, io.env);
  const presets = { ...config.presets, ...choice.presets };
  if (v.model !== undefined && !Object.hasOwn(presets, v.model)) {
    throw new CliError(
      `--model: no preset '${v.model}'; presets: ${Object.keys(presets).sort().join(", ")} (add it to actorzero.config.json)`,
    );
  }
  const store = await openLog(where, { create: false });
  try {
    const { openProjections } = await import("../../projections/engine.ts");
    const source = await resolveContext(await openProjections(store), v.positionals["<id>"]!, where);
    if (source.agentNumber !== 0)
      throw new CliError(
        `${source.id.slice(0, 8)} is a subordinate (A${source.agentNumber}): replay its root, ${source.rootContextId.slice(0, 8)}`,
      );
    const { exportFixture } = await import("../../fixtures/export.ts");
    const { withReplay } = await import("../../fixtures/replay.ts");
    const { fixtureTools } = await import("../../fixtures/fixtureTools.ts");
    const { fixtureModel } = await import("../../fixtures/fixtureModel.ts");
    const { compareRuns } = await import("../../fixtures/runComparison.ts");
    // The recorded run, read with the configuration it ran under.
    const reader = await runtimeFor(store, config, {
      model: demoModel(),
      presets: config.presets ?? {},
      offline: true,
      banner: "",
    });
    let recorded;
    try {
      recorded = await exportFixture(reader, source.id, { tree: true });
    } finally {
      await reader.close();
    }
    const replayed = await withReplay(
      recorded,
      {
        store,
        model: answers ? fixtureModel(answers) : choice.model,
        tools: fixtureTools(recorded),
        presets,
        ...(promptsDir !== undefined ? { promptsDir } : {}),
        ...(config.profiles ? { profiles: config.profiles } : {}),
        ...(v.model !== undefined ? { modelOverride: { preset: v.model } } : {}),
      },
      (rt, rootId) => exportFixture(rt, rootId, { tree: true }),
    );
    const comparison = compareRuns(recorded, replayed);
    const against = [
      v.model !== undefined ? `--model ${v.model}` : null,
      v.prompts !== undefined ? `--prompts ${v.prompts}` : null,
    ]
      .filter(Boolean)
      .join(" ");
    if (v.json) {
      io.print(
        JSON.stringify({
          recorded: source.id,
          replay: replayed.root,
          against: { model: v.model ?? null, prompts: v.prompts ?? null, fixture: v.fixture ?? null },
          ...comparison,
        }),
      );
      return EXIT.ok;
    }
    // 80 columns, the header and footer too (a long data dir path wraps rather than overflows).
    const header = `replay-run of A0 ${source.profile} ${source.id.slice(0, 8)} (${recorded.contexts[0]!.messages.length} message(s)) · ${answers ? `model answers from ${v.fixture}` : choice.banner}`;
    for (const line of wrap(header, WIDTH)) io.print(line);
    io.print("");
    for (const line of replayReport(comparison, {
      recorded: `recorded ${source.id.slice(0, 8)}`,
      replay: `replay ${replayed.root.slice(0, 8)} (${against})`,
    }))
      io.print(line);
    for (const line of wrap(
      `the replay is in the log: actorzero audit ${replayed.root.slice(0, 8)}${locationFlags(where)}`,
      WIDTH,
    ))
      io.print(io.paint.dim(line));
    return EXIT.ok;
  } finally {
    await store.close();
  }
};

const readFixture = (
  file: string,
  shown: string,
  parse: (json: unknown, source: string) => ReturnType<typeof import("../../fixtures/format.ts").parseFixture>,
) => {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new CliError(`--fixture: cannot read ${shown} as JSON: ${(e as Error).message}`);
  }
  try {
    return parse(json, shown);
  } catch (e) {
    throw new CliError((e as Error).message);
  }
};

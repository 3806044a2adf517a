// `actorzero export-fixture <id> [--tree] [--out file]`: a context (or its tree) from the log as a replayable fixture.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { loadConfig } from "../config.ts";
import { resolveContext, type Io } from "../context.ts";
import { CliError, EXIT } from "../errors.ts";
import { defineCommand, booleanFlag, STORE_FLAGS, textFlag, type ValuesOf } from "../defineCommand.ts";
import { demoModel } from "../demoModel.ts";
import { locate, openLog } from "../openLog.ts";
import { runtimeFor } from "../runtimeFor.ts";

export const exportFixtureSpec = defineCommand({
  name: "export-fixture",
  summary:
    "A context (--tree: and every subordinate below it) as a JSON fixture that replays its model calls in a test.",
  usage: ["export-fixture <id> [--tree] [--out <file>]"],
  args: [{ name: "<id>", id: true }],
  flags: {
    ...STORE_FLAGS,
    tree: booleanFlag("include every subordinate below the context (needed to replay delegations)"),
    out: textFlag("<file>", "write the fixture to this file (default: print it)", "--out needs a file name"),
  },
  details: `Each model request is rebuilt from the log as it was sent (system prompt, transcript, tool specs, model)
and keyed by the sha256 of its canonical form; with it come the reply, the usage, every tool call's arguments
and result, and the profiles and prompts in use. Secrets are redacted. Run it in the folder (and with the
actorzero.config.json) the run had: the system prompt and tool specs come from that configuration.
Replay it with fixtureModel (actorzero/testing) or actorzero check-fixtures. Format: docs/fixtures.md.`,
});
type Values = ValuesOf<typeof exportFixtureSpec>;

export const exportFixtureCommand = async (v: Values, io: Io): Promise<number> => {
  const where = locate(v, "export-fixture");
  const config = loadConfig(io.cwd);
  const store = await openLog(where, { create: false });
  try {
    const { openProjections } = await import("../../projections/engine.ts");
    const source = await resolveContext(await openProjections(store), v.positionals["<id>"]!, where);
    // No model is called: an export only reads the log, with the configuration's prompts, tools and presets.
    const rt = await runtimeFor(store, config, {
      model: demoModel(),
      presets: config.presets ?? {},
      offline: true,
      banner: "",
    });
    try {
      const { exportFixture, fixtureText } = await import("../../fixtures/export.ts");
      const fixture = await exportFixture(rt, source.id, { tree: v.tree === true });
      const text = fixtureText(fixture);
      if (v.out === undefined) {
        io.out.write(text);
        return EXIT.ok;
      }
      const file = path.resolve(io.cwd, v.out);
      try {
        writeFileSync(file, text);
      } catch (e) {
        throw new CliError(`cannot write ${v.out}: ${(e as Error).message}`);
      }
      const tools = fixture.toolResults.length;
      io.print(
        `wrote ${v.out}: ${fixture.contexts.length} context(s), ${fixture.calls.length} model call(s), ${tools} tool call(s) (fixture format ${fixture.formatVersion})`,
      );
      return EXIT.ok;
    } finally {
      await rt.close();
    }
  } finally {
    await store.close();
  }
};

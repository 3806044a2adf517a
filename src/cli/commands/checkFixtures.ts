// `actorzero check-fixtures <dir>`: replays every fixture in a folder offline and exits 1 on drift, naming where.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { loadConfig } from "../config.ts";
import type { Io } from "../context.ts";
import { CliError, EXIT } from "../errors.ts";
import { defineCommand, JSON_FLAG, textFlag, type ValuesOf } from "../defineCommand.ts";

export const checkFixturesSpec = defineCommand({
  name: "check-fixtures",
  summary:
    "Replays every fixture in a folder without a model; exits 1 on drift, naming the fixture, the step and the diff.",
  usage: ["check-fixtures <dir> [--prompts <dir>] [--json]"],
  args: [{ name: "<dir>" }],
  flags: {
    prompts: textFlag(
      "<dir>",
      "a prompts folder to replay with (default: the bundled prompts)",
      "--prompts needs a folder",
    ),
    ...JSON_FLAG,
  },
  details: `Every *.json file of the folder that has a formatVersion is a fixture (actorzero export-fixture). Each
is replayed on a log in memory: its root is sent its recorded messages, the model answers from the fixture by
request hash, the fixture's own tools return their recorded results, and the prompts, profiles
(actorzero.config.json) and built-in tools are the current ones. A request the fixture does not hold, an
answer or a log shape that differs is drift: printed with the fixture, the context, the model call and the
changed lines. Exit 0 when every fixture replays as recorded, 1 otherwise.
--json: { ok, fixtures: [{ file, ok, calls, drift: [{ kind, path, step, message }], error? }] }.`,
});
type Values = ValuesOf<typeof checkFixturesSpec>;

type Checked = {
  file: string;
  ok: boolean;
  calls: number;
  drift: { kind: string; path: string; step: number | null; message: string }[];
  error?: string;
};

/** The fixtures of a folder: *.json files that carry a formatVersion, sorted by name. */
const fixtureFiles = (dir: string): { file: string; json: unknown }[] => {
  let names: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new Error("not a folder");
    names = readdirSync(dir)
      .filter((n) => n.endsWith(".json"))
      .sort();
  } catch (e) {
    throw new CliError(`cannot read the folder ${dir}: ${(e as Error).message}`);
  }
  return names.flatMap((file) => {
    let json: unknown;
    try {
      json = JSON.parse(readFileSync(path.join(dir, file), "utf8"));
    } catch {
      return [];
    }
    return json !== null && typeof json === "object" && "formatVersion" in json ? [{ file, json }] : [];
  });
};

export const checkFixturesCommand = async (v: Values, io: Io): Promise<number> => {
  const dir = path.resolve(io.cwd, v.positionals["<dir>"]!);
  const config = loadConfig(io.cwd);
  const files = fixtureFiles(dir);
  if (files.length === 0)
    throw new CliError(
      `no fixtures in ${v.positionals["<dir>"]} (*.json files with a formatVersion; see actorzero export-fixture)`,
    );
  const { replayFixture } = await import("../../fixtures/replay.ts");
  const { parseFixture } = await import("../../fixtures/format.ts");
  const { openPgliteStore } = await import("../../events/pgliteStore.ts");
  const promptsDir = v.prompts === undefined ? undefined : path.resolve(io.cwd, v.prompts);
  // One log in memory for all: each replay is a root of its own in it.
  const store = await openPgliteStore();
  const checked: Checked[] = [];
  try {
    for (const { file, json } of files) {
      try {
        const fixture = parseFixture(json, file);
        const result = await replayFixture(fixture, {
          store,
          ...(promptsDir !== undefined ? { promptsDir } : {}),
          ...(config.profiles ? { profiles: config.profiles } : {}),
        });
        checked.push({ file, ok: result.ok, calls: result.replayed.calls.length, drift: result.drift });
      } catch (e) {
        checked.push({ file, ok: false, calls: 0, drift: [], error: e instanceof Error ? e.message : String(e) });
      }
    }
  } finally {
    await store.close();
  }
  const ok = checked.every((c) => c.ok);
  if (v.json) {
    io.print(JSON.stringify({ ok, fixtures: checked }));
    return ok ? EXIT.ok : EXIT.failed;
  }
  for (const c of checked) {
    if (c.ok) {
      io.print(`${io.paint.green("ok")}     ${c.file}  (${c.calls} model calls replayed)`);
      continue;
    }
    io.print(`${io.paint.red("DRIFT")}  ${c.file}${c.error ? `: ${c.error}` : ""}`);
    // The first drift is the cause; the rest (answers, log shapes) usually follow from it.
    for (const d of c.drift.slice(0, 1)) {
      io.print(
        `  at ${d.path}${d.step !== null ? `, ${d.kind === "request" ? "model call" : d.kind === "shape" ? "event" : "run"} ${d.step}` : ""}:`,
      );
      for (const line of d.message.split("\n")) io.print(`  ${line}`);
    }
    if (c.drift.length > 1)
      io.print(io.paint.dim(`  (${c.drift.length - 1} more difference(s) follow from it; --json lists them)`));
  }
  const bad = checked.filter((c) => !c.ok).length;
  io.print(
    `${checked.length} fixture(s): ${checked.length - bad} replayed as recorded${bad > 0 ? `, ${bad} drifted` : ""}`,
  );
  return ok ? EXIT.ok : EXIT.failed;
};

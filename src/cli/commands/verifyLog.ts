// `actorzero verify-log [--print-head] [--since <position>:<hash>]`: checks the log's hash chain, streams, rows and projections.
import { z } from "zod";
import { StoreError } from "../../events/errors.ts";
import { formatAnchor, parseAnchor } from "../../events/verifyLog.ts";
import type { Io } from "../context.ts";
import { CliError, EXIT } from "../errors.ts";
import { defineCommand, booleanFlag, JSON_FLAG, STORE_FLAGS, type ValuesOf } from "../defineCommand.ts";
import { duration } from "../format.ts";
import { verifyWholeLog, type WholeLogVerification } from "../../projections/wholeLogVerification.ts";
import { holderRefused, openLogOrHolder, type Opened } from "../holder.ts";
import { describeLocation, locate, type LogLocation } from "../openLog.ts";

export const verifyLogSpec = defineCommand({
  name: "verify-log",
  summary:
    "Check that the log is intact: its hash chain, stream versions, every event, and the projections; --print-head for an anchor.",
  usage: ["verify-log [--print-head] [--since <position>:<hash>] [--json]"],
  args: [],
  flags: {
    ...STORE_FLAGS,
    "print-head": booleanFlag(
      "after a passing check, print only the head as <position>:<hash>, to keep outside the log",
    ),
    since: {
      type: "string",
      value: "<position>:<hash>",
      description: "also prove the log only grew since an anchor printed earlier",
      schema: z
        .string()
        .refine((s) => parseAnchor(s) !== undefined, {
          message: "--since takes <position>:<hash> as verify-log --print-head prints it, e.g. 152:9f86d0…",
        })
        .optional(),
    },
    ...JSON_FLAG,
  },
  details: `verify-log reads the whole log and writes nothing to it (on a data dir that actorzero run, send or serve
holds, that process checks it and answers through its control socket). It checks that every event's hash follows
from the one before (an edit, insert, deletion or move anywhere breaks the chain), that each stream's
versions run 1, 2, 3… in log order, that every event decodes in full, that the append-only trigger is on,
and that the projections equal a rebuild. It prints the first bad position and what is wrong with it.
Exit 0: intact; 1: something failed; 2: not an actorzero log (nothing was written).
A chain proves nothing against someone who rewrites it from the edit on: keep the head it prints
(--print-head) outside the log, and later run --since <that head> to prove the log only grew.
--json: { ok, events, head: { position, hash }, lastPosition, unsealed, chainAfter, unchained, since, problems: [{ position, problem }], projections }.`,
});
type Values = ValuesOf<typeof verifyLogSpec>;

export const verifyLogCommand = async (v: Values, io: Io): Promise<number> => {
  const where = locate(v, "verify-log");
  const since = v.since === undefined ? undefined : parseAnchor(v.since);
  const started = Date.now();
  const opened = await openExisting(where);
  let result: WholeLogVerification;
  if (opened.holder) {
    // The process holding the data dir checks it (the whole log and its live projections) and answers.
    const answer = await opened.holder.call(
      "GET",
      `/v1/log/verification?full=true${v.since ? `&since=${encodeURIComponent(v.since)}` : ""}`,
    );
    if (answer.status !== 200) throw holderRefused(answer);
    result = answer.body as WholeLogVerification;
  } else {
    const store = opened.store;
    try {
      result = await verifyWholeLog(store, since ? { since } : {}).catch((e: unknown) => {
        throw e instanceof StoreError && e.reason === "refused"
          ? new CliError(`cannot verify ${describeLocation(where)}: ${e.message}`, EXIT.usage)
          : e;
      });
    } finally {
      await store.close();
    }
  }
  const code = result.ok ? EXIT.ok : EXIT.failed;
  const anchor =
    result.head.hash === null ? undefined : formatAnchor({ position: result.head.position, hash: result.head.hash });
  if (v.json) {
    io.print(JSON.stringify(result));
    return code;
  }
  if (v["print-head"] && result.ok) {
    if (!anchor) throw new CliError("the log has no chained event yet: there is no head to print");
    io.print(anchor);
    return code;
  }
  const p = io.paint;
  const covered =
    result.unchained === 0
      ? ""
      : ` (${result.unchained} event${result.unchained === 1 ? "" : "s"} up to position ${result.chainAfter} predate the chain and are not covered by it)`;
  const tail =
    result.unsealed === 0
      ? ""
      : `; ${result.unsealed} later event${result.unsealed === 1 ? " is" : "s are"} covered by ${result.unsealed === 1 ? "its stream's chain" : "their streams' chains"} until the next seal`;
  if (result.ok) {
    io.print(
      `${p.green("verified")}: ${result.events} events, the hash chain is intact up to the head ${anchor ?? "(none)"}${covered}${tail}`,
    );
    io.print(
      "every stream's versions run 1, 2, 3…, every event decodes, the append-only trigger is on, and the projections equal a rebuild",
    );
    if (since) io.print(`the log only grew since the anchor ${formatAnchor(since)}`);
    io.print(
      p.dim(
        `${duration(Date.now() - started)} · keep the head outside the log; later: actorzero verify-log --since ${anchor ?? "<head>"}`,
      ),
    );
    return code;
  }
  const [first, ...rest] = result.problems;
  io.print(`${p.red("FAILED")}: ${where1(first!.position)}${first!.problem}`);
  for (const problem of rest) io.print(`  ${where1(problem.position)}${problem.problem}`);
  io.print(
    p.dim(
      `${result.events} events read; the first bad position is the earliest the log can no longer be trusted from.`,
    ),
  );
  return code;
};

const where1 = (position: number | null) => (position === null ? "" : `position ${position}: `);

/**
 * Opens the log as it is: a missing, foreign or damaged one is exit 2, and nothing is created or upgraded.
 * A data dir another process holds is verified by that process (its control socket).
 */
const openExisting = async (where: LogLocation): Promise<Opened> => {
  try {
    return await openLogOrHolder(where, { create: false, schema: "existing" });
  } catch (e) {
    if (e instanceof CliError) throw new CliError(e.message, EXIT.usage);
    if (e instanceof StoreError && e.reason !== "locked")
      throw new CliError(`cannot verify ${describeLocation(where)}: ${e.message}`, EXIT.usage);
    throw e;
  }
};

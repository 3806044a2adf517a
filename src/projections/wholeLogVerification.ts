// The whole verification of a log, as `verify-log` and `audit` run it: the log against itself, then the projections against the log.
//
// Requirements:
// - The log first (store.verify: chain, stream versions, decodable rows, the append-only guard).
// - A log shorter than its projections (a checkpoint past the head: events were removed) is a problem,
//   found before the projections are opened (opening them refuses such a log).
// - The projections equal a rebuild from the log (projections.verify); a fold that fails on a bad
//   row is a problem at that row, not a crash.
import { EventDecodeError } from "../events/errors.ts";
import type { EventStore } from "../events/store.ts";
import { byPosition, type LogProblem, type LogVerification, type VerifyLogOptions } from "../events/verifyLog.ts";
import type { Projections } from "./engine.ts";
import { logShorterThanProjections } from "./logLength.ts";

export type WholeLogVerification = LogVerification & {
  /** Projection rows that differ from a rebuild (`projection key`), or null when they could not be compared. */
  projections: { ok: boolean; differences: string[] } | null;
};

/**
 * Verifies the log in `store`, then its projections; `ok` only when everything holds. `projections`: the ones a
 * running process keeps (the holder of a data dir answering `verify-log`), instead of opening a second set.
 */
export const verifyWholeLog = async (
  store: EventStore,
  options: VerifyLogOptions = {},
  projections?: Projections,
): Promise<WholeLogVerification> => {
  const log = await store.verify(options);
  const problems: LogProblem[] = [...log.problems];
  let compared: WholeLogVerification["projections"] = null;
  const shorter = await logShorterThanProjections(store.sql, log.lastPosition);
  if (shorter) problems.push({ position: log.lastPosition, problem: shorter });
  else if (log.problems.every((p) => !/cannot be decoded/.test(p.problem))) {
    try {
      const { openProjections } = await import("./engine.ts");
      const result = await (projections ?? (await openProjections(store))).verify();
      const differences = result.mismatches.map((m) => `${m.projection} ${m.key}`);
      compared = { ok: result.ok, differences };
      if (!result.ok)
        problems.push({
          position: null,
          problem: `the projections differ from a rebuild of the log: ${differences.slice(0, 5).join(", ")}${differences.length > 5 ? ", …" : ""} (actorzero replay --verify shows how)`,
        });
    } catch (e) {
      if (!(e instanceof EventDecodeError)) throw e;
      problems.push({ position: e.globalPosition, problem: `the projections cannot fold it: ${e.message}` });
    }
  }
  problems.sort(byPosition);
  return { ...log, ok: problems.length === 0, problems, projections: compared };
};

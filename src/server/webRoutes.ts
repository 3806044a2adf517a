// The read routes the web page needs beyond the control API: the tree (now, or as it was at a position) and the audit.
//
// Requirements:
// - `GET /v1/tree` folds the log with the projections' own evolve (TreeFold): now, for some `ids` only, or `at` a
//   global position (time travel: everything after it left out). The live fold continues from where the last
//   request left it, so a page refreshing a few rows costs the events since, not the whole log.
// - `GET /v1/contexts/:id/audit` answers the very report `actorzero audit --json` prints (the same loader and
//   fold, src/projections/auditLoad.ts); `at` cuts it at a position; `children=summary` keeps each child's
//   identity and totals but not its runs (a page showing one context need not carry the whole subtree).
// - Reads never go past the log's settled position, so a row never misses an event that commits late.
// - `GET /v1/log/verification` answers whether the log holds together, as `actorzero audit` says it (the runtime's
//   verify: hash chain, stream versions, rows, append-only guard); one check at a time, shared by whoever asks
//   meanwhile, since it reads the whole log. With `full=true` (and `since=<position>:<hash>`) it answers what
//   `actorzero verify-log --json` prints, the projections compared with a rebuild too: the command asks the
//   process holding a data dir this way.
import type { Hono } from "hono";
import { z } from "zod";
import type { Runtime } from "../runtime/api.ts";
import { parseAnchor } from "../events/verifyLog.ts";
import type { AuditReport, ContextAudit } from "../projections/auditReport.ts";
import type { WholeLogVerification } from "../projections/wholeLogVerification.ts";
import { ApiError } from "./errors.ts";
import { ContextIdParam, describeIssues } from "./schemas.ts";
import { TreeFold } from "./treeFold.ts";

const PAGE = 2000;
const MAX_IDS = 500;

const position = z.coerce.number().int().min(0);

export const TreeQuery = z.strictObject({
  at: position.optional(),
  ids: z
    .string()
    .transform((s) => s.split(",").filter((x) => x !== ""))
    .pipe(z.array(z.uuid({ error: "must be context ids (UUIDs) separated by commas" })).max(MAX_IDS))
    .optional(),
});

export const AuditQuery = z.strictObject({
  at: position.optional(),
  children: z.enum(["full", "summary"]).optional(),
});

export const VerificationQuery = z.strictObject({
  full: z.enum(["true", "false"], { error: "must be true or false" }).optional(),
  since: z
    .string()
    .refine((t) => parseAnchor(t) !== undefined, {
      error: "must be <position>:<hash> as verify-log --print-head prints it",
    })
    .optional(),
});

const parse = <S extends z.ZodType>(schema: S, value: unknown, where: string): z.infer<S> => {
  const r = schema.safeParse(value);
  if (!r.success) throw new ApiError("invalid_request", describeIssues(r.error, where));
  return r.data;
};

/** Each child as its identity and totals, without runs or grandchildren. */
const summarised = (c: ContextAudit): ContextAudit => ({
  ...c,
  children: c.children.map((k) => ({ ...k, runs: [], children: [] })),
});

export const webRoutes = (app: Hono, rt: Runtime): void => {
  const live = new TreeFold();
  let travel: TreeFold | null = null;
  let queue: Promise<unknown> = Promise.resolve();
  // One fold at a time: two requests catching up the same fold would apply a page twice over each other.
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const p = queue.then(work);
    queue = p.catch(() => undefined);
    return p;
  };
  const foldUpTo = async (fold: TreeFold, until: number) => {
    for (;;) {
      const page = await rt.eventsPage({ after: fold.position, limit: PAGE });
      const wanted = page.events.filter((e) => e.globalPosition <= until);
      fold.apply(wanted);
      if (page.next === null || wanted.length < page.events.length) return;
    }
  };

  app.get("/v1/tree", async (c) => {
    const q = parse(TreeQuery, c.req.query(), "query");
    const head = await rt.settledPosition();
    return c.json(
      await serial(async () => {
        if (q.at === undefined) {
          await foldUpTo(live, head);
          return { position: head, head, rows: live.rows(q.ids) };
        }
        const at = Math.min(q.at, head);
        // Moving the slider forward continues the last fold; moving it back starts again from zero.
        if (!travel || travel.position > at) travel = new TreeFold();
        await foldUpTo(travel, at);
        // The time of that position: a run still going then is timed up to it, not to today's clock.
        return { position: at, head, recordedAt: travel.recordedAt, rows: travel.rows(q.ids) };
      }),
    );
  });

  let verifying: Promise<WholeLogVerification> | null = null;
  app.get("/v1/log/verification", async (c) => {
    const q = parse(VerificationQuery, c.req.query(), "query");
    if (q.full === "true" || q.since !== undefined) {
      const since = q.since === undefined ? undefined : parseAnchor(q.since)!;
      return c.json(await rt.verify({ projections: true, ...(since ? { since } : {}) }));
    }
    verifying ??= rt.verify().finally(() => {
      verifying = null;
    });
    const { ok, events, head, chainAfter, unchained, problems } = await verifying;
    return c.json({ ok, events, head, chainAfter, unchained, problems });
  });

  app.get("/v1/contexts/:id/audit", async (c) => {
    const id = parse(ContextIdParam, c.req.param(), "path").id;
    const q = parse(AuditQuery, c.req.query(), "query");
    if (!(await rt.context(id))) throw new ApiError("not_found", `no context ${id}`);
    let report: AuditReport;
    try {
      report = await rt.audit(id, q.at === undefined ? {} : { at: q.at });
    } catch (e) {
      // The context exists now, so a not-found here is the cut: the log did not hold it yet at `at`.
      if (q.at !== undefined && (e as { reason?: unknown }).reason === "not_found")
        throw new ApiError("not_found", `context ${id} did not exist yet at position ${q.at}`);
      throw e;
    }
    return c.json(q.children === "summary" ? { ...report, context: summarised(report.context) } : report);
  });
};

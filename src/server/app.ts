// The HTTP API over a runtime's public API: routes under /v1, the health check, bearer auth, body limit, one error shape.
// Requirements: every request is validated by the zod schemas in schemas.ts before the runtime sees it (so bad
// input writes nothing); one request guard (guard.ts: Host, Origin, Content-Type) before every route, the page and
// /healthz included; /healthz and the web page's files are the only routes open without a token when tokens are set;
// a route outside the token's role is a 403 (tokens.ts); a decision is recorded under the caller's name, never a body field;
// 503 once the server is closing.
import { Hono, type Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { z } from "zod";
import type { Runtime } from "../runtime/api.ts";
import { ApiError, errorBody, toApiError } from "./errors.ts";
import type { EventHub } from "./eventHub.ts";
import { requestGuard, type GuardOptions } from "./guard.ts";
import { openApiDocument } from "./openapi.ts";
import {
  ApprovalIdParam,
  ApprovalsQuery,
  ApproveBody,
  RejectBody,
  ContextIdParam,
  ContextsQuery,
  CreateContextBody,
  describeIssues,
  EventsQuery,
  ForkBody,
  NoOptionsBody,
  SendMessageBody,
  StreamQuery,
} from "./schemas.ts";
import { eventStream } from "./sse.ts";
import { webAssets } from "./webAssets.ts";
import { allows, permissionFor, type Caller, type TokenTable } from "./tokens.ts";
import { webRoutes } from "./webRoutes.ts";
import { mcpRoute } from "./mcpRoute.ts";
import { a2aRoute } from "./a2aRoute.ts";
import { budgetRoutes } from "./budgetRoutes.ts";

export const DEFAULT_BODY_LIMIT = 1024 * 1024;
export const DEFAULT_MAX_STREAMS = 256;
export const DEFAULT_MAX_STREAMS_PER_TOKEN = 64;

export type AppOptions = {
  /** The bearer tokens; none = no authentication (loopback or the control socket only). */
  tokens: TokenTable;
  /** Open event streams allowed at once: on the server, and per token when there are tokens (beyond: 429). */
  maxStreams?: number;
  maxStreamsPerToken?: number;
  /** Who a caller is when there are no tokens: the serving process's OS user, with every role. */
  anonymous: Caller;
  /** Which Host names and Origins may call (guard.ts). */
  guard: GuardOptions;
  bodyLimit?: number;
  /** True once the server is draining: every route but /healthz answers 503. */
  closing: () => boolean;
  /** Settles when the server starts closing (waiting requests give up then). */
  closed: Promise<void>;
};

const parse = <S extends z.ZodType>(schema: S, value: unknown, where: string): z.infer<S> => {
  const r = schema.safeParse(value);
  if (!r.success) throw new ApiError("invalid_request", describeIssues(r.error, where));
  return r.data;
};

const jsonBody = async (c: Context, optional: boolean): Promise<unknown> => {
  const text = await c.req.text();
  if (text.trim() === "") {
    if (optional) return {};
    throw new ApiError("invalid_request", "body: a JSON object is required");
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ApiError("invalid_request", `body: malformed JSON (${(e as Error).message})`);
  }
};

/** Who sent each request in flight (set by the auth middleware, read by the routes that record a name). */
const callers = new WeakMap<Request, Caller>();
const callerOf = (c: Context): Caller => callers.get(c.req.raw)!;

/** A decision is recorded under the caller's name; a `by` in the body would let anyone type any name. */
const decisionBody = async (c: Context): Promise<unknown> => {
  const body = await jsonBody(c, true);
  if (typeof body === "object" && body !== null && "by" in body) {
    throw new ApiError(
      "invalid_request",
      "by: not accepted; a decision is recorded under the name of the token that sent it (without tokens, the server's OS user)",
    );
  }
  return body;
};

export const buildApp = (rt: Runtime, hub: EventHub, options: AppOptions): Hono => {
  const app = new Hono();

  app.onError((e, c) => {
    const api = toApiError(e);
    return c.json(errorBody(api.code, api.message), api.status);
  });
  app.notFound((c) => c.json(errorBody("not_found", `no route ${c.req.method} ${c.req.path}`), 404));

  app.use("*", requestGuard(options.guard));
  app.get("/healthz", (c) =>
    c.json({ ok: !options.closing(), closing: options.closing() }, options.closing() ? 503 : 200),
  );
  // The web page's files are open like /healthz; the API calls it makes carry the token.
  webAssets(app);

  app.use("*", async (c, next) => {
    if (options.closing()) throw new ApiError("closing", "the server is shutting down");
    let caller = options.anonymous;
    if (options.tokens.size > 0) {
      const header = c.req.header("authorization") ?? "";
      const m = /^Bearer (.+)$/i.exec(header);
      const found = m ? options.tokens.find(m[1]!) : null;
      if (found === null) {
        c.header("WWW-Authenticate", 'Bearer realm="actorzero"');
        throw new ApiError(
          "unauthorized",
          header === "" ? "a bearer token is required (Authorization: Bearer <token>)" : "the bearer token is wrong",
        );
      }
      caller = found;
    }
    const need = permissionFor(c.req.method, c.req.path);
    if (!allows(caller.role, need)) {
      throw new ApiError(
        "forbidden",
        `the token '${caller.name}' (role ${caller.role}) may not ${need === "approve" ? "decide approvals" : "act on contexts"}; it needs the role ${need} or admin`,
      );
    }
    callers.set(c.req.raw, caller);
    await next();
  });

  app.use(
    "*",
    bodyLimit({
      maxSize: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
      // The rest of the body is never read, so the connection cannot be reused: say so, or the client's next request fails.
      onError: (c) =>
        c.json(
          errorBody("payload_too_large", `body: over the limit of ${options.bodyLimit ?? DEFAULT_BODY_LIMIT} bytes`),
          413,
          { connection: "close" },
        ),
    }),
  );

  const known = async (id: string) => {
    const view = await rt.context(id);
    if (!view) throw new ApiError("not_found", `no context ${id}`);
    return view;
  };
  const idOf = (c: Context) => parse(ContextIdParam, c.req.param(), "path").id;

  app.get("/v1/openapi.json", (c) => c.json(openApiDocument()));
  webRoutes(app, rt);
  mcpRoute(app, rt);
  a2aRoute(app, rt, { bearer: options.tokens.size > 0 });
  budgetRoutes(app, rt, (c) => jsonBody(c, false));

  app.get("/v1/contexts", async (c) => {
    const q = parse(ContextsQuery, c.req.query(), "query");
    const filter = { ...(q.status ? { status: q.status } : {}), ...(q.root ? { rootContextId: q.root } : {}) };
    return c.json({ contexts: await rt.contexts(filter) });
  });

  app.post("/v1/contexts", async (c) => {
    const body = parse(CreateContextBody, await jsonBody(c, true), "body");
    return c.json(await rt.createContext(body), 201);
  });

  app.get("/v1/contexts/:id", async (c) => c.json(await known(idOf(c))));

  app.get("/v1/contexts/:id/children", async (c) => {
    const id = idOf(c);
    await known(id);
    return c.json({ children: await rt.children(id) });
  });

  app.get("/v1/contexts/:id/history", async (c) => {
    const id = idOf(c);
    await known(id);
    return c.json({ history: await rt.history(id) });
  });

  app.post("/v1/contexts/:id/messages", async (c) => {
    const id = idOf(c);
    const body = parse(SendMessageBody, await jsonBody(c, false), "body");
    await known(id);
    // The runtime names the run that takes the message as it records it: no guessing from the log.
    const started = rt.start(id, body.text, body.budget ? { budget: body.budget } : {});
    // Whatever the race below, the run's end (or a refusal) never goes unhandled.
    started.then(
      (r) => r.ended.catch(() => undefined),
      () => undefined,
    );
    const closing = options.closed.then(() => {
      // Which of the two the run met is the log's to say: close() records a run in flight as
      // interrupted and leaves one awaiting approval parked.
      throw new ApiError(
        "closing",
        "the server shut down before the run ended: a run in flight is recorded as interrupted, a run awaiting approval stays parked in the log",
      );
    });
    closing.catch(() => undefined);
    const run = await Promise.race([started, closing]);
    if (!body.wait) {
      return c.json({ contextId: id, runId: run.runId, intervention: run.intervention }, 202);
    }
    return c.json(await Promise.race([run.ended, closing]), 200);
  });

  app.post("/v1/contexts/:id/stop", async (c) => {
    const id = idOf(c);
    parse(NoOptionsBody, await jsonBody(c, true), "body");
    const before = await known(id);
    if (before.status !== "running")
      throw new ApiError("conflict", `context ${id} is not running (${before.status}); nothing to stop`);
    const outcome = await rt.stop(id);
    if (!outcome) {
      const now = await known(id);
      throw new ApiError("conflict", `context ${id} is not running (${now.status}); nothing to stop`);
    }
    return c.json({ contextId: id, outcome, context: await known(id) });
  });

  // A new root whose history is the context's own up to `at` (the act role, as creating a context is).
  app.post("/v1/contexts/:id/fork", async (c) => {
    const id = idOf(c);
    const body = parse(ForkBody, await jsonBody(c, false), "body");
    await known(id);
    return c.json(await rt.fork(id, { at: body.at }), 201);
  });

  for (const action of ["pause", "resume"] as const) {
    app.post(`/v1/contexts/:id/${action}`, async (c) => {
      const id = idOf(c);
      parse(NoOptionsBody, await jsonBody(c, true), "body");
      await known(id);
      await rt[action](id);
      return c.json(await known(id));
    });
  }

  app.get("/v1/approvals", async (c) => {
    const q = parse(ApprovalsQuery, c.req.query(), "query");
    if (q.contextId) await known(q.contextId);
    return c.json({ approvals: await rt.approvals(q.contextId ? { contextId: q.contextId } : {}) });
  });

  // A decision is recorded (and the parked run goes on) before the answer: 404 unknown, 409 already decided or run ended.
  app.post("/v1/approvals/:id/approve", async (c) => {
    const { id } = parse(ApprovalIdParam, c.req.param(), "path");
    const body = parse(ApproveBody, await decisionBody(c), "body");
    const by = callerOf(c).name;
    await rt.approve(id, { by, ...(body.note !== undefined ? { note: body.note } : {}) });
    return c.json({ approvalId: id, status: "granted", by });
  });
  app.post("/v1/approvals/:id/reject", async (c) => {
    const { id } = parse(ApprovalIdParam, c.req.param(), "path");
    const body = parse(RejectBody, await decisionBody(c), "body");
    const by = callerOf(c).name;
    await rt.reject(id, { by, reason: body.reason });
    return c.json({ approvalId: id, status: "denied", by });
  });

  app.get("/v1/events", async (c) => {
    const q = parse(EventsQuery, c.req.query(), "query");
    // The runtime's page as it is: `next` is null once the page reaches the end of the log, so a client that
    // pages "until next is null" ends (and polls with its last position to see what came since).
    const page = await rt.eventsPage({
      ...(q.after !== undefined ? { after: q.after } : {}),
      ...(q.contextId ? { contextId: q.contextId } : {}),
      limit: q.limit ?? 1000,
    });
    return c.json(page);
  });

  const maxStreams = options.maxStreams ?? DEFAULT_MAX_STREAMS;
  const maxPerToken = options.maxStreamsPerToken ?? DEFAULT_MAX_STREAMS_PER_TOKEN;
  let streamCount = 0;
  const streamsOf = new Map<string, number>();
  app.get("/v1/events/stream", (c) => {
    const q = parse(StreamQuery, c.req.query(), "query");
    const lastId = c.req.header("last-event-id");
    let after = q.after ?? 0;
    if (lastId !== undefined && lastId.trim() !== "") {
      const n = Number(lastId);
      if (!Number.isSafeInteger(n) || n < 0)
        throw new ApiError("invalid_request", "Last-Event-ID: must be a log position (a whole number)");
      after = n;
    }
    // Each open stream holds a connection and a queue: a cap per server, and per token when there are tokens.
    const who = callerOf(c).name;
    const mine = streamsOf.get(who) ?? 0;
    if (streamCount >= maxStreams)
      throw new ApiError(
        "too_many_streams",
        `this server already has ${maxStreams} event streams open; close one, or retry later`,
      );
    if (options.tokens.size > 0 && mine >= maxPerToken)
      throw new ApiError(
        "too_many_streams",
        `the token '${who}' already has ${maxPerToken} event streams open; close one, or retry later`,
      );
    streamCount++;
    streamsOf.set(who, mine + 1);
    const client = hub.join(after, q.contextId);
    let released = false;
    return eventStream(c, {
      next: () => client.next(),
      ready: () => client.ready(),
      get endReason() {
        return client.endReason;
      },
      ended: client.ended,
      get held() {
        return client.held;
      },
      close: () => {
        client.close();
        if (released) return;
        released = true;
        streamCount--;
        const left = (streamsOf.get(who) ?? 1) - 1;
        if (left === 0) streamsOf.delete(who);
        else streamsOf.set(who, left);
      },
    });
  });

  return app;
};

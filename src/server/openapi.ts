// The OpenAPI 3.1 document of the HTTP API, generated from the zod schemas that validate its requests.
// Requirements: no hand-written copy of a request shape (z.toJSONSchema of the very schemas in schemas.ts), so the
// document cannot drift from what the server accepts.
import { z } from "zod";
import {
  ApprovalIdParam,
  ApprovalsQuery,
  ApproveBody,
  ContextIdParam,
  ForkBody,
  ContextsQuery,
  CreateContextBody,
  ErrorBody,
  EventsQuery,
  ExtendBudgetBody,
  RejectBody,
  SendMessageBody,
  StreamQuery,
} from "./schemas.ts";
import { AuditQuery, TreeQuery, VerificationQuery } from "./webRoutes.ts";

const schemaOf = (s: z.ZodType) => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(s, { io: "input", unrepresentable: "any" }) as Record<
    string,
    unknown
  >;
  return rest;
};

const paramsOf = (s: z.ZodObject, where: "query" | "path") =>
  Object.entries(s.shape).map(([name, field]) => ({
    name,
    in: where,
    required: where === "path" || !(field as z.ZodType).safeParse(undefined).success,
    schema: schemaOf(field as z.ZodType),
  }));

const error = (description: string) => ({
  description,
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
});
const ok = (description: string) => ({ description, content: { "application/json": { schema: { type: "object" } } } });
const body = (s: z.ZodType, required: boolean) => ({
  required,
  content: { "application/json": { schema: schemaOf(s) } },
});
const common = {
  "400": error("Invalid request: the message names the field"),
  "401": error("Missing or wrong bearer token"),
  "403": error("Another origin, or a route outside the token's role"),
  "415": error("A write whose Content-Type is not application/json"),
  "421": error("A Host this server is not reached by"),
  "503": error("The server is closing"),
};
const withContext = { ...common, "404": error("No such context") };

const action = (summary: string, extra: Record<string, unknown> = {}) => ({
  post: {
    summary,
    parameters: paramsOf(ContextIdParam, "path"),
    responses: { "200": ok(summary), ...withContext, ...extra },
  },
});

const decision = (summary: string, s: z.ZodType) => ({
  post: {
    summary,
    parameters: paramsOf(ApprovalIdParam, "path"),
    requestBody: body(s, true),
    responses: {
      "200": ok("{ approvalId, status, by }: by is the deciding token's name"),
      ...common,
      "404": error("No such approval"),
      "409": error("Already decided, or its run ended"),
    },
  },
});

let cached: Record<string, unknown> | null = null;

export const openApiDocument = (): Record<string, unknown> =>
  (cached ??= {
    openapi: "3.1.0",
    info: {
      title: "actorzero",
      version: "0.1.0",
      description: "Control a live agent tree: contexts, messages, stop/pause/resume, and the event log.",
    },
    components: {
      schemas: { Error: schemaOf(ErrorBody) },
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
    },
    security: [{ bearer: [] }],
    paths: {
      "/healthz": {
        get: {
          summary: "Liveness (never needs the token)",
          security: [],
          responses: { "200": ok("Up"), "503": ok("Closing") },
        },
      },
      "/v1/contexts": {
        get: {
          summary: "List contexts",
          parameters: paramsOf(ContextsQuery, "query"),
          responses: { "200": ok("{ contexts }"), ...common },
        },
        post: {
          summary: "Create a root context",
          requestBody: body(CreateContextBody, false),
          responses: { "201": ok("The new context"), ...common, "413": error("Body too large") },
        },
      },
      "/v1/contexts/{id}": {
        get: {
          summary: "One context",
          parameters: paramsOf(ContextIdParam, "path"),
          responses: { "200": ok("The context"), ...withContext },
        },
      },
      "/v1/contexts/{id}/children": {
        get: {
          summary: "Its subordinates",
          parameters: paramsOf(ContextIdParam, "path"),
          responses: { "200": ok("{ children }"), ...withContext },
        },
      },
      "/v1/contexts/{id}/audit": {
        get: {
          summary: "Its audit, as `actorzero audit --json` prints it (at = as it was at that log position)",
          parameters: [...paramsOf(ContextIdParam, "path"), ...paramsOf(AuditQuery, "query")],
          responses: { "200": ok("The audit report (format 1)"), ...withContext },
        },
      },
      "/v1/tree": {
        get: {
          summary: "The delegation tree, one row per context (at = as it was at that log position)",
          parameters: paramsOf(TreeQuery, "query"),
          responses: {
            "200": ok(
              "{ position, head, rows }; with at, also recordedAt: when the event at that position was recorded",
            ),
            ...common,
          },
        },
      },
      "/v1/log/verification": {
        get: {
          summary:
            "Whether the log holds together, as `actorzero audit` says: its hash chain, stream versions, rows and append-only guard (full=true: also the projections against a rebuild, as `actorzero verify-log` checks; since: the log only grew since that anchor)",
          parameters: paramsOf(VerificationQuery, "query"),
          responses: {
            "200": ok(
              "{ ok, events, head: { position, hash }, chainAfter, unchained, problems: [{ position, problem }] }; with full or since, as `verify-log --json` prints it",
            ),
            ...common,
          },
        },
      },
      "/v1/contexts/{id}/fork": {
        post: {
          summary: "A new root whose history is the context's own up to the event at log position `at` (role act)",
          parameters: paramsOf(ContextIdParam, "path"),
          requestBody: body(ForkBody, true),
          responses: {
            "201": ok("The new root context (its ContextCreated records forkedFrom: the source and position)"),
            ...withContext,
          },
        },
      },
      "/v1/contexts/{id}/history": {
        get: {
          summary: "Its transcript",
          parameters: paramsOf(ContextIdParam, "path"),
          responses: { "200": ok("{ history }"), ...withContext },
        },
      },
      "/v1/contexts/{id}/messages": {
        post: {
          summary: "Send a message (starts a run, or intervenes in the running one)",
          parameters: paramsOf(ContextIdParam, "path"),
          requestBody: body(SendMessageBody, true),
          responses: {
            "200": ok("The run's outcome (wait: true)"),
            "202": ok("{ contextId, runId, intervention }"),
            ...withContext,
            "413": error("Body too large"),
          },
        },
      },
      "/v1/contexts/{id}/budget": {
        get: {
          summary: "The budget of the context's tree (answered for its root)",
          parameters: paramsOf(ContextIdParam, "path"),
          responses: {
            "200": ok(
              "{ rootContextId, limits, spent, reserved, parked: [{ contextId, runId, limit, step }] }; limits null: no budget",
            ),
            ...withContext,
          },
        },
      },
      "/v1/contexts/{id}/budget/extend": {
        post: {
          summary: "Add to the limits of the context's tree; runs parked on its budget go on (role act)",
          parameters: paramsOf(ContextIdParam, "path"),
          requestBody: body(ExtendBudgetBody, true),
          responses: { "200": ok("The tree's budget after the extension, as GET …/budget answers it"), ...withContext },
        },
      },
      "/v1/contexts/{id}/stop": action("Stop the run and every running subordinate", {
        "409": error("Not running (the message gives its status)"),
      }),
      "/v1/contexts/{id}/pause": action("Pause at the next checkpoint"),
      "/v1/contexts/{id}/resume": action("Resume a paused context"),
      "/v1/approvals": {
        get: {
          summary: "Tool calls waiting for a decision (the tree under contextId, or all)",
          parameters: paramsOf(ApprovalsQuery, "query"),
          responses: { "200": ok("{ approvals }"), ...withContext },
        },
      },
      "/v1/approvals/{id}/approve": decision("Let the call run; its parked run goes on", ApproveBody),
      "/v1/approvals/{id}/reject": decision("Deny the call; the model gets the reason", RejectBody),
      "/v1/events": {
        get: {
          summary: "One page of the log",
          parameters: paramsOf(EventsQuery, "query"),
          responses: {
            "200": ok(
              "{ events, next }: next is the `after` of the next page, null once this page reaches the end of the log",
            ),
            ...common,
          },
        },
      },
      "/v1/events/stream": {
        get: {
          summary: "The log as Server-Sent Events; id = global position, Last-Event-ID resumes",
          parameters: [
            ...paramsOf(StreamQuery, "query"),
            { name: "Last-Event-ID", in: "header", required: false, schema: { type: "string" } },
          ],
          responses: {
            "200": {
              description: "text/event-stream",
              content: { "text/event-stream": { schema: { type: "string" } } },
            },
            ...common,
          },
        },
      },
    },
  });

// OpenTelemetry spans for runs, model calls and tool calls, through `@opentelemetry/api` only.
// Requirements: a no-op when the embedder registers no tracer provider; gen_ai.* semantic-convention attributes;
// a child run can be parented to its parent's `call_subordinate` span, also in another process, through a W3C
// `traceparent` string stored with the event (no propagator needs to be registered); a failure sets the span's
// status and records the exception by name and message only, after redaction (never a stack, never a key).
// The API (47 modules) loads with the first span that can record: a process that passes no provider and
// registers nothing with the API never loads it; one that registers later is seen from its next span on.
import { createRequire } from "node:module";
import type { Context, Span, SpanContext, SpanKind, SpanStatusCode, Tracer, TracerProvider } from "@opentelemetry/api";
import { redactSecrets } from "../events/redact.ts";

export type { Context, Span, Tracer } from "@opentelemetry/api";

type OtelApi = typeof import("@opentelemetry/api");
let api: OtelApi | undefined;
/** The OpenTelemetry API, loaded on first use (it is CommonJS, so `require` loads it at once). */
const otel = (): OtelApi => (api ??= createRequire(import.meta.url)("@opentelemetry/api") as OtelApi);

/**
 * Whether spans need the API: something was registered with it (version 1 keeps its registrations under
 * this key), or it is loaded already (a provider was passed, or a stored traceparent was read). Once
 * loaded, it decides as it always did (a non-recording span still carries its parent's context along).
 */
const apiNeeded = (): boolean => api !== undefined || Symbol.for("opentelemetry.js.api.1") in globalThis;

// The API's enum values (stable since 1.0), so that naming them does not load it.
const INTERNAL = 0 as SpanKind.INTERNAL;
const CLIENT = 2 as SpanKind.CLIENT;
const ERROR = 2 as SpanStatusCode.ERROR;

/** The span of a tracer that records nothing: its context is invalid, as the API's own no-op span's is. */
const INVALID: SpanContext = { traceId: "0".repeat(32), spanId: "0".repeat(16), traceFlags: 0 };
class NoopSpan implements Span {
  spanContext = () => INVALID;
  setAttribute = () => this;
  setAttributes = () => this;
  addEvent = () => this;
  addLink = () => this;
  addLinks = () => this;
  setStatus = () => this;
  updateName = () => this;
  end = () => undefined;
  isRecording = () => false;
  recordException = () => undefined;
}
const NOOP_SPAN = new NoopSpan();

/** An empty context, as the API's ROOT_CONTEXT is, for when the API is not loaded (values are kept immutably, as the API's are). */
class PlainContext implements Context {
  constructor(private readonly values: ReadonlyMap<symbol, unknown> = new Map()) {}
  getValue = (key: symbol): unknown => this.values.get(key);
  setValue = (key: symbol, value: unknown): Context => new PlainContext(new Map(this.values).set(key, value));
  deleteValue = (key: symbol): Context => {
    const values = new Map(this.values);
    values.delete(key);
    return new PlainContext(values);
  };
}
const PLAIN_ROOT: Context = new PlainContext();

/** The root context: the API's once it is loaded. */
const rootContext = (): Context => (api === undefined ? PLAIN_ROOT : api.ROOT_CONTEXT);

/** The active context: the root while the API is not needed (without a context manager, the API's is the root too). */
export const activeContext = (): Context => (apiNeeded() ? otel().context.active() : PLAIN_ROOT);

/** The globally registered provider's tracer, looked up at each span: a no-op span until something registers. */
const globalTracer: Tracer = {
  startSpan: (name, options, context) =>
    apiNeeded() ? otel().trace.getTracer("actorzero", "0.1.0").startSpan(name, options, context) : NOOP_SPAN,
  startActiveSpan: ((...args: unknown[]) => {
    const tracer = otel().trace.getTracer("actorzero", "0.1.0");
    return (tracer.startActiveSpan as (...a: unknown[]) => unknown).apply(tracer, args);
  }) as Tracer["startActiveSpan"],
};

/** The tracer actorzero's spans come from: the given provider's, else the globally registered one (no-op by default). */
export const actorzeroTracer = (provider?: TracerProvider): Tracer =>
  provider === undefined ? globalTracer : provider.getTracer("actorzero", "0.1.0");

/** The context a span is current in: pass it as `parent` when starting that span's children. */
export const contextWith = (span: Span, parent: Context = activeContext()): Context =>
  span === NOOP_SPAN && api === undefined ? parent : otel().trace.setSpan(parent, span);

export type RunSpanInput = { contextId: string; runId: string; agentNumber: number; profile: string; parent?: Context };

/** A span per run: `invoke_agent <profile>`, with the context id, agent number and profile. */
export function startRunSpan(tracer: Tracer, run: RunSpanInput): Span {
  return tracer.startSpan(
    `invoke_agent ${run.profile}`,
    {
      kind: INTERNAL,
      attributes: {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": run.contextId,
        "gen_ai.agent.name": run.profile,
        "actorzero.context_id": run.contextId,
        "actorzero.run_id": run.runId,
        "actorzero.agent_number": run.agentNumber,
        "actorzero.profile": run.profile,
      },
    },
    run.parent ?? activeContext(),
  );
}

/** Ends a run span with the run's final status; `failed` sets the error status and records the error. */
export function endRunSpan(
  span: Span,
  end: {
    status: "completed" | "failed" | "stopped" | "interrupted";
    error?: unknown;
    redact?: (text: string) => string;
  },
): void {
  span.setAttribute("actorzero.run.status", end.status);
  if (end.status === "failed") fail(span, end.error, end.redact);
  span.end();
}

export type ModelSpanInput = {
  system: string;
  model: string;
  parent?: Context;
  serverAddress?: string;
  purpose?: string;
};

/** A span per model call: `chat <model>`, kind CLIENT, as the gen_ai conventions name it. */
export function startModelSpan(tracer: Tracer, call: ModelSpanInput): Span {
  return tracer.startSpan(
    `chat ${call.model}`,
    {
      kind: CLIENT,
      attributes: {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": call.system,
        "gen_ai.provider.name": call.system,
        "gen_ai.request.model": call.model,
        ...(call.serverAddress ? { "server.address": call.serverAddress } : {}),
        ...(call.purpose ? { "actorzero.model.purpose": call.purpose } : {}),
      },
    },
    call.parent ?? activeContext(),
  );
}

export function endModelSpan(
  span: Span,
  end: {
    usage?: { inputTokens: number; outputTokens: number };
    finishReason?: string;
    error?: unknown;
    redact?: (text: string) => string;
  },
): void {
  if (end.usage) {
    span.setAttribute("gen_ai.usage.input_tokens", end.usage.inputTokens);
    span.setAttribute("gen_ai.usage.output_tokens", end.usage.outputTokens);
  }
  if (end.finishReason) span.setAttribute("gen_ai.response.finish_reasons", [end.finishReason]);
  if (end.error !== undefined) fail(span, end.error, end.redact);
  span.end();
}

/** A span per tool call: `execute_tool <name>`. A delegation's child run takes this span as its parent. */
export function startToolSpan(tracer: Tracer, call: { name: string; toolCallId: string; parent?: Context }): Span {
  return tracer.startSpan(
    `execute_tool ${call.name}`,
    {
      kind: INTERNAL,
      attributes: {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.toolCallId,
      },
    },
    call.parent ?? activeContext(),
  );
}

/** `repairable` errors went back to the model: the call is still marked as an error, the run goes on. */
export function endToolSpan(span: Span, end: { error?: unknown; redact?: (text: string) => string } = {}): void {
  if (end.error !== undefined) fail(span, end.error, end.redact);
  span.end();
}

/** The span's W3C `traceparent` (for the event metadata of a delegation), or undefined for a no-op span. */
export function traceparentOf(span: Span): string | undefined {
  if (span === NOOP_SPAN) return undefined;
  const { traceId, spanId, traceFlags } = span.spanContext();
  if (!otel().trace.isSpanContextValid(span.spanContext())) return undefined;
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

/** The parent context a stored `traceparent` stands for; the root context for anything malformed. */
export function contextFromTraceparent(traceparent: string | undefined): Context {
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(traceparent ?? "");
  if (!match) return rootContext();
  const { trace, ROOT_CONTEXT } = otel();
  const spanContext = {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: Number.parseInt(match[3]!, 16),
    isRemote: true,
  };
  return trace.isSpanContextValid(spanContext) ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : ROOT_CONTEXT;
}

// The shared redaction is the default, so a caller that passes nothing still records no URL credential or key.
const fail = (span: Span, error: unknown, redact: (text: string) => string = redactSecrets): void => {
  const name = error instanceof Error ? error.name : "Error";
  const message = redact(error instanceof Error ? error.message : String(error ?? "failed"));
  span.recordException({ name, message });
  span.setStatus({ code: ERROR, message });
  span.setAttribute(
    "error.type",
    (error as { reason?: unknown })?.reason ? String((error as { reason: unknown }).reason) : name,
  );
};

// OpenTelemetry spans for runs, model calls and tool calls, through `@opentelemetry/api` only.
// Requirements: a no-op when the embedder registers no tracer provider; gen_ai.* semantic-convention attributes;
// a child run can be parented to its parent's `call_subordinate` span, also in another process, through a W3C
// `traceparent` string stored with the event (no propagator needs to be registered); a failure sets the span's
// status and records the exception by name and message only, after redaction (never a stack, never a key).
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context as otelContext,
  trace,
  type Context,
  type Span,
  type Tracer,
  type TracerProvider,
} from "@opentelemetry/api";
import { redactSecrets } from "../events/redact.ts";

export type { Context, Span, Tracer } from "@opentelemetry/api";

/** The tracer actorzero's spans come from: the given provider's, else the globally registered one (no-op by default). */
export const actorzeroTracer = (provider?: TracerProvider): Tracer => (provider ?? trace).getTracer("actorzero", "0.1.0");

/** The context a span is current in: pass it as `parent` when starting that span's children. */
export const contextWith = (span: Span, parent: Context = otelContext.active()): Context => trace.setSpan(parent, span);

export type RunSpanInput = { contextId: string; runId: string; agentNumber: number; profile: string; parent?: Context };

/** A span per run: `invoke_agent <profile>`, with the context id, agent number and profile. */
export function startRunSpan(tracer: Tracer, run: RunSpanInput): Span {
  return tracer.startSpan(
    `invoke_agent ${run.profile}`,
    {
      kind: SpanKind.INTERNAL,
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
    run.parent ?? otelContext.active(),
  );
}

/** Ends a run span with the run's final status; `failed` sets the error status and records the error. */
export function endRunSpan(
  span: Span,
  end: { status: "completed" | "failed" | "stopped" | "interrupted"; error?: unknown; redact?: (text: string) => string },
): void {
  span.setAttribute("actorzero.run.status", end.status);
  if (end.status === "failed") fail(span, end.error, end.redact);
  span.end();
}

export type ModelSpanInput = { system: string; model: string; parent?: Context; serverAddress?: string };

/** A span per model call: `chat <model>`, kind CLIENT, as the gen_ai conventions name it. */
export function startModelSpan(tracer: Tracer, call: ModelSpanInput): Span {
  return tracer.startSpan(
    `chat ${call.model}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": call.system,
        "gen_ai.provider.name": call.system,
        "gen_ai.request.model": call.model,
        ...(call.serverAddress ? { "server.address": call.serverAddress } : {}),
      },
    },
    call.parent ?? otelContext.active(),
  );
}

export function endModelSpan(
  span: Span,
  end: { usage?: { inputTokens: number; outputTokens: number }; finishReason?: string; error?: unknown; redact?: (text: string) => string },
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
      kind: SpanKind.INTERNAL,
      attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name, "gen_ai.tool.call.id": call.toolCallId },
    },
    call.parent ?? otelContext.active(),
  );
}

/** `repairable` errors went back to the model: the call is still marked as an error, the run goes on. */
export function endToolSpan(span: Span, end: { error?: unknown; redact?: (text: string) => string } = {}): void {
  if (end.error !== undefined) fail(span, end.error, end.redact);
  span.end();
}

/** The span's W3C `traceparent` (for the event metadata of a delegation), or undefined for a no-op span. */
export function traceparentOf(span: Span): string | undefined {
  const { traceId, spanId, traceFlags } = span.spanContext();
  if (!trace.isSpanContextValid(span.spanContext())) return undefined;
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

/** The parent context a stored `traceparent` stands for; the root context for anything malformed. */
export function contextFromTraceparent(traceparent: string | undefined): Context {
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(traceparent ?? "");
  if (!match) return ROOT_CONTEXT;
  const spanContext = { traceId: match[1]!, spanId: match[2]!, traceFlags: Number.parseInt(match[3]!, 16), isRemote: true };
  return trace.isSpanContextValid(spanContext) ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : ROOT_CONTEXT;
}

// The shared redaction is the default, so a caller that passes nothing still records no URL credential or key.
const fail = (span: Span, error: unknown, redact: (text: string) => string = redactSecrets): void => {
  const name = error instanceof Error ? error.name : "Error";
  const message = redact(error instanceof Error ? error.message : String(error ?? "failed"));
  span.recordException({ name, message });
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.setAttribute("error.type", (error as { reason?: unknown })?.reason ? String((error as { reason: unknown }).reason) : name);
};

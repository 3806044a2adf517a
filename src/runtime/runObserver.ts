// What the runtime's runs look like from outside: live model deltas and OpenTelemetry spans, wired in as decorators and an append hook.
//
// Requirements:
// - Fed by the facts this process appends (the store's append hook): a run span from RunStarted to the run's end,
//   the model call in flight per context from ModelCalled; no other part of the runtime knows about it.
// - A decorated model port: a span per call (gen_ai.*), and the call's deltas to live listeners when there are
//   any (else the adapter is not asked to stream). A decorated tool: a span per call.
// - A delegation's child run is parented to its caller's tool span through a W3C `traceparent` stored in the
//   child's RunStarted metadata, so whichever process runs the child restores the parent from the log (at its
//   first model or tool call there, e.g. a call approved in another process than the one that parked it).
// - With no tracer provider registered every span is a no-op; nothing here changes what is stored, but that
//   `traceparent`, and nothing here can fail a run.
import type { Context, Span, Tracer } from "@opentelemetry/api";
import type { NewEvent, RecordedEvent } from "../events/schema.ts";
import type { EventStore, Unsubscribe } from "../events/store.ts";
import type { ModelPort, ModelRequest, ModelTurn } from "../models/port.ts";
import { runEndOf, type RunEnd } from "../projections/runStatus.ts";
import type { Tool, ToolContext } from "../tools/defineTool.ts";
import {
  activeContext,
  contextFromTraceparent,
  contextWith,
  endModelSpan,
  endRunSpan,
  endToolSpan,
  startModelSpan,
  startRunSpan,
  startToolSpan,
  traceparentOf,
} from "../telemetry/tracing.ts";
import type { LiveDeltas } from "./liveDeltas.ts";

type Call = { runId: string; step: number; attempt: number };
type Run = { runId: string; span: Span; context: Context };
/** What the observer needs to know of a context when its run starts. */
export type RunSubject = { agentNumber: number; profile: string };

const key = (contextId: string, toolCallId: string) => `${contextId}\u0000${toolCallId}`;

export class RunObserver {
  /** The model call in flight per context (its ModelCalled was appended here). */
  private readonly calls = new Map<string, Call>();
  /** The run in flight per context, with its span. */
  private readonly runs = new Map<string, Run>();
  /** Tool calls running now, by context and tool call id: a delegation's child run is parented to one. */
  private readonly tools = new Map<string, Span>();
  /** Who a context is (agent number, profile), asked when its run starts; set by the runtime. */
  subject: (contextId: string) => RunSubject | undefined = () => undefined;
  /** The log itself, read when a run this process did not start needs its span. */
  private log: EventStore | null = null;

  constructor(
    private readonly tracer: Tracer,
    private readonly deltas: LiveDeltas,
  ) {}

  /** Observes the store: every append of this process passes the hook on its way to the log (stopped by the result). */
  observe(store: EventStore): Unsubscribe {
    this.log = store;
    return store.onAppend({
      stamp: (_streamId, event) => this.traced(event),
      appended: (streamId, events) => {
        for (const e of events) this.appended(streamId, e);
      },
    });
  }

  /** A delegated run's start carries its caller's tool span, for whichever process runs it. */
  private traced(event: NewEvent): NewEvent {
    if (event.type !== "RunStarted" || !event.data.superior) return event;
    const { contextId, toolCallId } = event.data.superior;
    const span = this.tools.get(key(contextId, toolCallId));
    const traceparent = span ? traceparentOf(span) : undefined;
    return traceparent ? { ...event, metadata: { ...event.metadata, traceparent } } : event;
  }

  private appended(streamId: string, event: NewEvent): void {
    try {
      if (event.type === "ModelCalled") {
        const { runId, step, attempt } = event.data;
        this.calls.set(streamId, { runId, step, attempt });
      } else if (event.type === "RunStarted") {
        this.startRun(streamId, event.data.runId, event.metadata?.traceparent);
      } else {
        // A run's end in the words the context's status fold uses.
        const end = runEndOf(event);
        if (end) this.endRun(streamId, end);
      }
    } catch {
      // Observing must never fail what it observes.
    }
  }

  private startRun(contextId: string, runId: string, traceparent: string | undefined, known?: RunSubject): Run {
    const subject = known ?? this.subject(contextId);
    const parent = traceparent ? contextFromTraceparent(traceparent) : activeContext();
    const span = startRunSpan(this.tracer, {
      contextId,
      runId,
      agentNumber: subject?.agentNumber ?? -1,
      profile: subject?.profile ?? "unknown",
      parent,
    });
    const run = { runId, span, context: contextWith(span, parent) };
    this.runs.get(contextId)?.span.end();
    this.runs.set(contextId, run);
    return run;
  }

  private endRun(contextId: string, end: RunEnd): void {
    this.calls.delete(contextId);
    const run = this.runs.get(contextId);
    if (!run || run.runId !== end.runId) return;
    this.runs.delete(contextId);
    if (end.run === "failed" && end.failure) {
      const error = Object.assign(new Error(end.failure.message), { name: "RunFailed", reason: end.failure.reason });
      endRunSpan(run.span, { status: "failed", error });
    } else {
      endRunSpan(run.span, { status: end.run === "failed" ? "failed" : end.run });
    }
  }

  /**
   * The run span a call of `contextId` belongs to. A run this process did not see start (another process
   * started it) gets its span now, parented by the traceparent its stored RunStarted carries.
   */
  private async runOf(contextId: string, runId: string | undefined): Promise<Run | undefined> {
    const known = this.runs.get(contextId);
    if (known || !this.log || !runId) return known;
    const stream = await this.log.readStream(contextId);
    const started = stream.findLast(
      (e): e is Extract<RecordedEvent, { type: "RunStarted" }> => e.type === "RunStarted" && e.data.runId === runId,
    );
    const created = stream.find(
      (e): e is Extract<RecordedEvent, { type: "ContextCreated" }> => e.type === "ContextCreated",
    );
    const subject = created ? { agentNumber: created.data.agentNumber, profile: created.data.profile } : undefined;
    return started ? this.startRun(contextId, runId, started.metadata.traceparent, subject) : undefined;
  }

  /** The model port, observed: a span per call, and live deltas while anyone listens. */
  model(port: ModelPort): ModelPort {
    const observed: ModelPort = {
      call: async (request: ModelRequest): Promise<ModelTurn> => {
        const call = this.calls.get(request.contextId);
        const run = await this.runOf(request.contextId, call?.runId).catch(() => undefined);
        const span = startModelSpan(this.tracer, {
          system: port.provider ?? "_OTHER",
          model: request.model,
          ...(run ? { parent: run.context } : {}),
          ...(request.baseURL ? { serverAddress: hostOf(request.baseURL) } : {}),
          ...(request.purpose ? { purpose: request.purpose } : {}),
        });
        const own = request.onDelta;
        const live = call && this.deltas.listening ? call : null;
        const onDelta: ModelRequest["onDelta"] =
          live || own
            ? (delta) => {
                if (live)
                  this.deltas.publish({ type: "ModelDelta", live: true, contextId: request.contextId, ...live, delta });
                own?.(delta);
              }
            : undefined;
        try {
          const turn = await port.call(onDelta ? { ...request, onDelta } : request);
          const finishReason = Array.isArray(turn.toolCalls) && turn.toolCalls.length > 0 ? "tool_calls" : "stop";
          endModelSpan(span, { ...(turn.usage ? { usage: turn.usage } : {}), finishReason });
          return turn;
        } catch (error) {
          endModelSpan(span, { error });
          throw error;
        }
      },
    };
    if (port.provider !== undefined) Object.assign(observed, { provider: port.provider });
    return observed;
  }

  /** A tool, observed: a span per call, current while it runs so a delegation can parent its child's run to it. */
  tool = <I>(tool: Tool<I>): Tool<I> => ({
    name: tool.name,
    description: tool.description,
    input: tool.input,
    ...(tool.recordsCall !== undefined ? { recordsCall: tool.recordsCall } : {}),
    // What decides whether a call waits for a person, and whether it may run twice, goes with the tool.
    ...(tool.needsApproval !== undefined ? { needsApproval: tool.needsApproval } : {}),
    ...(tool.idempotent !== undefined ? { idempotent: tool.idempotent } : {}),
    run: this.spanned(tool.name, (input: I, ctx) => tool.run(input, ctx)),
    ...(tool.resume ? { resume: this.spanned(tool.name, (input: I, ctx) => tool.resume!(input, ctx)) } : {}),
  });

  private spanned =
    <I>(name: string, run: (input: I, ctx: ToolContext) => ReturnType<Tool<I>["run"]>) =>
    async (input: I, ctx: ToolContext) => {
      // A run another process started (a parked call approved here, a run resumed here) gets its span from the log first.
      const parent = (await this.runOf(ctx.contextId, ctx.runId).catch(() => undefined))?.context;
      const span = startToolSpan(this.tracer, { name, toolCallId: ctx.toolCallId, ...(parent ? { parent } : {}) });
      const k = key(ctx.contextId, ctx.toolCallId);
      this.tools.set(k, span);
      try {
        // The call's trace context goes with it, so a tool that reaches another service (MCP, A2A) continues this trace.
        const traceparent = traceparentOf(span);
        const result = await run(input, traceparent ? { ...ctx, traceparent } : ctx);
        endToolSpan(span);
        return result;
      } catch (error) {
        endToolSpan(span, { error });
        throw error;
      } finally {
        if (this.tools.get(k) === span) this.tools.delete(k);
      }
    };
}

const hostOf = (url: string): string | undefined => {
  try {
    return new URL(url).hostname;
  } catch {
    return undefined;
  }
};

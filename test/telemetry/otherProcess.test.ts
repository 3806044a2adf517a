// OpenTelemetry across processes on PostgreSQL: a child run parked for approval in one runtime goes on in a
// second runtime on the same database (the one that records the decision), and that runtime's spans of the
// child's run hang under the first runtime's call_subordinate span, restored from the traceparent stored on
// the child's RunStarted. Each runtime has its own provider and in-memory exporter, as two processes would.
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
  type Span,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { expect, it } from "vitest";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import type { RecordedEvent } from "../../src/events/schema.ts";
import { scriptedModel, type ScriptedHandler } from "../../src/models/scripted.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";
import { deployTool } from "../support/approvalTools.ts";

const deploy = deployTool();

/** A0 delegates; A1 calls deploy (which waits for approval), then answers with its result. */
const handler: ScriptedHandler = (req) => {
  const last = req.messages.at(-1)!;
  if (req.agentNumber === 0) {
    if (last.role === "user")
      return {
        toolCalls: [
          { id: "d1", name: "call_subordinate", arguments: JSON.stringify({ message: "deploy it", reset: true }) },
        ],
      };
    return { text: `parent: ${last.content as string}` };
  }
  if (last.role === "user")
    return { toolCalls: [{ id: "k1", name: "deploy", arguments: JSON.stringify({ env: "prod" }) }] };
  return { text: `child: ${last.content as string}` };
};

/** A provider with an in-memory exporter, which also keeps the spans started so far (ended or not). */
const traced = () => {
  const exporter = new InMemorySpanExporter();
  const started: Span[] = [];
  const keepStarted: SpanProcessor = {
    onStart: (span) => void started.push(span),
    onEnd: () => {},
    forceFlush: async () => {},
    shutdown: async () => {},
  };
  return {
    exporter,
    started,
    provider: new BasicTracerProvider({ spanProcessors: [keepStarted, new SimpleSpanProcessor(exporter)] }),
  };
};

/** Resolves with the first event of `type` appended after `after`. */
const next = <T extends RecordedEvent["type"]>(rt: Runtime, type: T, after: number, streamId?: string) =>
  new Promise<Extract<RecordedEvent, { type: T }>>((resolve) => {
    void rt.subscribe(
      (e) => {
        if (e.type === type && (streamId === undefined || e.streamId === streamId))
          resolve(e as Extract<RecordedEvent, { type: T }>);
      },
      { after },
    );
  });

describeWithPostgres(
  "given a delegation whose child is parked in one runtime and approved in another on the same PostgreSQL",
  () => {
    const db = usePostgresDatabase("actorzero_otel_procs");

    it("the other runtime's run span of the child is parented to the first one's call_subordinate span, and its calls sit under it", async () => {
      const first = traced();
      const second = traced();
      const storeA = await openPostgresStore({ url: db.url() });
      const storeB = await openPostgresStore({ url: db.url() });
      const limits = { leaseTtlMs: 500, passivateAfterMs: 60_000 };
      const a = await createRuntime({
        store: storeA,
        model: scriptedModel(handler),
        tools: [deploy],
        limits,
        tracerProvider: first.provider,
      });
      const b = await createRuntime({
        store: storeB,
        model: scriptedModel(handler),
        tools: [deploy],
        limits,
        tracerProvider: second.provider,
      });
      try {
        const root = await a.createContext();
        const requested = next(a, "ApprovalRequested", await storeA.headPosition());
        await a.start(root.id, "go");
        const approval = await requested;
        const child = approval.streamId;

        // The child's run started in A, under A's call_subordinate span: that span's context is on its RunStarted.
        const childStart = (await storeB.readStream(child)).find(
          (e): e is Extract<RecordedEvent, { type: "RunStarted" }> => e.type === "RunStarted",
        )!;
        const [, traceId, spanId] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(
          childStart.metadata.traceparent ?? "",
        )!;

        // B records the decision, so the child's run goes on in B: its tool call and its second model call.
        const childEnd = next(b, "RunCompleted", await storeB.headPosition(), child);
        await b.approve(approval.data.approvalId, { by: "alice" });
        expect((await childEnd).data.response).toBe("child: deployed to prod");

        // In A: the call_subordinate span whose context the child's RunStarted carries (still open: A0 waits on).
        const delegation = first.started.find((s) => s.name === "execute_tool call_subordinate")!;
        expect(delegation.spanContext()).toMatchObject({ traceId, spanId });
        expect(
          first.exporter
            .getFinishedSpans()
            .some((s) => s.attributes["actorzero.context_id"] === child && s.name.startsWith("invoke_agent")),
        ).toBe(false);

        // In B: a run span for the child, restored under A's span, with B's tool and model spans under it.
        const spansB = second.exporter.getFinishedSpans();
        const runB = spansB.find(
          (s) => s.name.startsWith("invoke_agent") && s.attributes["actorzero.context_id"] === child,
        )!;
        expect(runB).toBeDefined();
        expect(runB.spanContext().traceId).toBe(traceId);
        expect(runB.parentSpanContext?.spanId).toBe(spanId);
        expect(runB.attributes["actorzero.agent_number"]).toBe(1);
        const under = (s: ReadableSpan) => s.parentSpanContext?.spanId === runB.spanContext().spanId;
        // The approved deploy call (it runs before any model call of B) and the model call that follows.
        expect(
          spansB
            .filter(under)
            .map((s) => s.name.replace(/^chat .*/, "chat"))
            .sort(),
        ).toEqual(["chat", "execute_tool deploy"]);
        expect(spansB.every((s) => s.spanContext().traceId === traceId)).toBe(true);
      } finally {
        await b.close();
        await a.close();
        await storeB.close();
        await storeA.close();
      }
    });
  },
);

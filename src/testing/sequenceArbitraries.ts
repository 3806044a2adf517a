// fast-check arbitraries for recorded logs: valid sequences over a few contexts, plausible run lifecycles or
// (with chaos) any valid events in any order.
import fc from "fast-check";
import type { ContextId, EventId, JobId, RunId } from "../events/ids.ts";
import { RunFailureReason, type DomainEvent, type RecordedEvent } from "../events/schema.ts";
import { jsonValueArb } from "./jsonArbitrary.ts";
import { cid, count, domainEventArb, jid, nullable, superiorArb, textArb, type IdPools } from "./arbitraries.ts";

type Body = DomainEvent[];

const runBodyArb = (p: IdPools, runId: RunId, last: boolean): fc.Arbitrary<Body> =>
  fc
    .record({
      text: textArb,
      sender: fc.constantFrom("user" as const, "superior" as const),
      superior: nullable(superiorArb(p)),
      steps: fc.array(
        fc.record({
          interventions: fc.array(textArb, { maxLength: 2 }),
          pause: fc.constantFrom("none", "pause", "pause-resume"),
          retried: fc.boolean(),
          replyText: nullable(textArb),
          warn: nullable(textArb),
          usage: nullable(fc.record({ inputTokens: count, outputTokens: count })),
          calls: fc.array(
            fc.record({
              id: fc.uuid(),
              name: fc.constantFrom("search", "call_subordinate", "parallel"),
              args: jsonValueArb,
              outcome: fc.constantFrom("returned", "failed", "dangling", "job"),
              result: textArb,
              job: jid(p),
              child: cid(p),
            }),
            { maxLength: 2 },
          ),
        }),
        { maxLength: 3 },
      ),
      lateInterventions: fc.array(textArb, { maxLength: 2 }),
      terminal: last
        ? fc.constantFrom("RunCompleted", "RunStopped", "RunFailed", "RunInterrupted", null)
        : fc.constantFrom("RunCompleted", "RunStopped", "RunFailed", "RunInterrupted"),
      response: textArb,
      failure: fc.constantFrom(...RunFailureReason.options),
    })
    .map((r) => {
      const out: Body = [
        { type: "MessageReceived", data: { runId, text: r.text, sender: r.sender } },
        { type: "RunStarted", data: { runId, model: "gpt-4o-mini", superior: r.superior } },
      ];
      r.steps.forEach((s, step) => {
        for (const text of s.interventions) out.push({ type: "InterventionReceived", data: { runId, text } });
        if (s.pause !== "none") out.push({ type: "ContextPaused", data: { runId } });
        if (s.pause === "pause-resume") out.push({ type: "ContextResumed", data: { runId } });
        if (s.retried) {
          out.push({ type: "ModelCalled", data: { runId, step, attempt: 0, model: "gpt-4o-mini" } });
          out.push({
            type: "ModelCallFailed",
            data: {
              runId,
              step,
              attempt: 0,
              reason: "rate_limited",
              message: "slow down",
              retryable: true,
              retryInMs: 10,
            },
          });
        }
        out.push({ type: "ModelCalled", data: { runId, step, attempt: s.retried ? 1 : 0, model: "gpt-4o-mini" } });
        const toolCalls = s.calls.map((c) => ({ id: c.id, name: c.name, arguments: c.args }));
        out.push({ type: "ModelReplied", data: { runId, step, text: s.replyText, toolCalls, usage: s.usage } });
        if (s.warn !== null && toolCalls.length === 0)
          out.push({ type: "ModelWarned", data: { runId, step, text: s.warn } });
        for (const c of s.calls) {
          out.push({ type: "ToolCalled", data: { runId, step, toolCallId: c.id, name: c.name, arguments: c.args } });
          if (c.outcome === "returned")
            out.push({ type: "ToolReturned", data: { runId, toolCallId: c.id, name: c.name, result: c.result } });
          if (c.outcome === "failed") {
            out.push({
              type: "ToolFailed",
              data: { runId, toolCallId: c.id, name: c.name, error: c.result, repairable: true },
            });
          }
          if (c.outcome === "job") {
            const jobId = c.job as JobId;
            const child = c.child as ContextId;
            out.push({
              type: "ParallelJobStarted",
              data: { runId, toolCallId: c.id, jobId, toolName: "call_subordinate", arguments: c.args },
            });
            out.push({
              type: "SubordinateCalled",
              data: { runId, toolCallId: c.id, childContextId: child, fresh: true, jobId },
            });
            out.push({
              type: "SubordinateReturned",
              data: {
                runId,
                toolCallId: c.id,
                childContextId: child,
                outcome: "completed",
                result: c.result,
                reason: null,
              },
            });
            out.push({
              type: "ParallelJobFinished",
              data: { runId, jobId, status: "success", result: c.result, error: null, contextId: child },
            });
            out.push({ type: "ToolReturned", data: { runId, toolCallId: c.id, name: c.name, result: c.result } });
          }
        }
      });
      for (const text of r.lateInterventions) out.push({ type: "InterventionReceived", data: { runId, text } });
      switch (r.terminal) {
        case "RunCompleted":
          out.push({ type: "RunCompleted", data: { runId, response: r.response } });
          break;
        case "RunStopped":
          out.push({ type: "RunStopped", data: { runId, by: "user" } });
          break;
        case "RunFailed":
          out.push({ type: "RunFailed", data: { runId, reason: r.failure, message: r.response } });
          break;
        case "RunInterrupted":
          out.push({ type: "RunInterrupted", data: { runId } });
          break;
        case null:
          break;
      }
      return out;
    });

/** A plausible life: a few runs, each message → start → steps → terminal (the last may be unfinished). */
const plausibleBodyArb = (p: IdPools): fc.Arbitrary<Body> =>
  fc.uniqueArray(fc.uuid(), { maxLength: 3 }).chain((runIds) =>
    runIds.length === 0
      ? fc.constant([])
      : fc
          .tuple(
            ...runIds.map((r, i) => runBodyArb(p, r as RunId, i === runIds.length - 1)),
            fc.array(
              fc.constantFrom<Body[number]>(
                { type: "ContextRenamed", data: { name: "renamed", label: "renamed" } },
                { type: "ModelOverrideSet", data: { modelOverride: { preset: "fast" } } },
                { type: "ContextPaused", data: { runId: null } },
                { type: "ContextResumed", data: { runId: null } },
              ),
              { maxLength: 2 },
            ),
          )
          .map((parts) => {
            const extras = parts.pop() as Body;
            return [...(parts as Body[]).flat(), ...extras];
          }),
  );

/** Any valid events in any order, with ids from small pools so they collide and interact. */
const chaoticBodyArb = (p: IdPools): fc.Arbitrary<Body> => fc.array(domainEventArb(p), { maxLength: 20 });

export type SequenceOptions = { maxContexts?: number; chaos?: boolean };

/**
 * A valid recorded log over a few contexts: ContextCreated first in each stream, contiguous stream
 * versions, increasing global positions (with gaps, as a Postgres sequence may leave), streams
 * interleaved at random. Bodies are plausible run lifecycles, or (with `chaos`, the default) sometimes
 * arbitrary valid events in arbitrary order, since folds must be total.
 */
export const recordedSequenceArb = (options: SequenceOptions = {}): fc.Arbitrary<RecordedEvent[]> => {
  const maxContexts = options.maxContexts ?? 4;
  return fc
    .uniqueArray(fc.uuid(), { minLength: 1, maxLength: maxContexts })
    .chain((ids) => {
      const pools: IdPools = {
        contextId: fc.constantFrom(...ids),
        runId: fc.constantFrom("run-a", "run-b", "run-c"),
        toolCallId: fc.constantFrom("call-1", "call-2", "call-3"),
        jobId: fc.constantFrom("job-1", "job-2"),
      };
      const body =
        options.chaos === false ? plausibleBodyArb(pools) : fc.oneof(plausibleBodyArb(pools), chaoticBodyArb(pools));
      return fc.tuple(
        fc.constant(ids),
        fc.tuple(...ids.map((_, i) => (i === 0 ? fc.constant(null) : nullable(fc.nat({ max: i - 1 }))))),
        fc.tuple(...ids.map(() => body)),
        fc.infiniteStream(fc.double({ min: 0, max: 1, noNaN: true })),
        fc.infiniteStream(fc.integer({ min: 1, max: 3 })),
        fc.uuid(),
      );
    })
    .map(([ids, parents, bodies, orderKeys, gaps, seedId]) => {
      // Creation facts consistent with the tree: number and depth one below the parent, root inherited.
      const created: DomainEvent[] = [];
      const info: { agentNumber: number; root: string }[] = [];
      ids.forEach((id, i) => {
        const parent = parents[i] ?? null;
        const pInfo = parent === null ? null : info[parent]!;
        const agentNumber = pInfo === null ? 0 : pInfo.agentNumber + 1;
        info.push({ agentNumber, root: pInfo === null ? id : pInfo.root });
        created.push({
          type: "ContextCreated",
          data: {
            contextId: id as ContextId,
            name: `A${agentNumber}`,
            label: `A${agentNumber}`,
            profile: "default",
            project: null,
            agentNumber,
            depth: agentNumber,
            kind: parent === null ? "root" : "subordinate",
            parentContextId: parent === null ? null : (ids[parent] as ContextId),
            parentAgentNumber: pInfo === null ? null : pInfo.agentNumber,
            rootContextId: (pInfo === null ? id : pInfo.root) as ContextId,
            slot: parent === null ? null : "default",
            modelOverride: null,
          },
        });
      });
      const streams = ids.map((id, i) => ({ id, events: [created[i]!, ...bodies[i]!] }));
      const tokens = streams.flatMap((s, i) =>
        s.events.map(() => ({ stream: i, key: orderKeys.next().value as number })),
      );
      tokens.sort((a, b) => a.key - b.key);
      const cursor = streams.map(() => 0);
      const out: RecordedEvent[] = [];
      let position = 0;
      const base = Date.parse("2026-01-01T00:00:00.000Z");
      for (const { stream } of tokens) {
        const s = streams[stream]!;
        const index = cursor[stream]!++;
        position += gaps.next().value as number;
        out.push({
          ...s.events[index]!,
          globalPosition: position,
          streamId: s.id as ContextId,
          streamVersion: index + 1,
          eventId: eventIdFor(seedId, position),
          schemaVersion: 1,
          metadata: { correlationId: null, causationId: null, actor: null },
          recordedAt: new Date(base + position * 1000).toISOString(),
        } as RecordedEvent);
      }
      return out;
    });
};

/** A deterministic, distinct uuid per position of one generated log. */
const eventIdFor = (seed: string, position: number): EventId =>
  `${seed.slice(0, 24)}${position.toString(16).padStart(12, "0")}` as EventId;

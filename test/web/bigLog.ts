// A large log for the web page's large-tree test and bench: trees of a root, two A1 and one A2 under the first A1,
// each context one finished run of model steps, appended through the store as the runtime would record them.
import { randomUUID } from "node:crypto";
import type { ContextId, RunId } from "../../src/events/ids.ts";
import type { NewEvent } from "../../src/events/schema.ts";
import type { EventStore } from "../../src/events/store.ts";

const SHAPE = [
  { agentNumber: 0, depth: 0, parent: null },
  { agentNumber: 1, depth: 1, parent: 0 },
  { agentNumber: 2, depth: 2, parent: 1 },
  { agentNumber: 1, depth: 1, parent: 0 },
] as const;

/** Appends `contexts` contexts (in trees of four) and about `events` events; resolves with the root ids in order. */
export const fillBigLog = async (store: EventStore, contexts: number, events: number): Promise<string[]> => {
  const perContext = Math.max(6, Math.floor(events / contexts));
  const steps = Math.max(1, Math.floor((perContext - 4) / 2));
  const roots: string[] = [];
  let tree: { id: ContextId; runId: RunId }[] = [];
  for (let i = 0; i < contexts; i++) {
    const place = SHAPE[i % SHAPE.length]!;
    if (place.parent === null) tree = [];
    const id = randomUUID() as ContextId;
    const runId = randomUUID() as RunId;
    const parent = place.parent === null ? null : tree[place.parent]!;
    const root = tree[0]?.id ?? id;
    if (place.parent === null) roots.push(id);
    tree.push({ id, runId });
    const task =
      place.parent === null
        ? `Task ${roots.length}: survey part ${roots.length} of the corpus`
        : `Look into item ${i} for A${place.agentNumber - 1}`;
    const batch: NewEvent[] = [
      {
        type: "ContextCreated",
        data: {
          contextId: id,
          name: `ctx ${i}`,
          label: `ctx ${i}`,
          profile: "default",
          project: null,
          agentNumber: place.agentNumber,
          depth: place.depth,
          kind: parent ? "subordinate" : "root",
          parentContextId: parent?.id ?? null,
          parentAgentNumber: parent ? place.agentNumber - 1 : null,
          rootContextId: root,
          slot: parent ? "default" : null,
          modelOverride: null,
        },
      },
      { type: "MessageReceived", data: { runId, text: task, sender: parent ? "superior" : "user" } },
      {
        type: "RunStarted",
        data: {
          runId,
          model: "gpt-4o-mini",
          superior: parent ? { contextId: parent.id, runId: parent.runId, toolCallId: `call-${i}`, jobId: null } : null,
        },
      },
    ];
    for (let step = 1; step <= steps; step++) {
      batch.push(
        { type: "ModelCalled", data: { runId, step, attempt: 1, model: "gpt-4o-mini" } },
        {
          type: "ModelReplied",
          data: {
            runId,
            step,
            text: `step ${step} of ${steps}`,
            toolCalls: [],
            usage: { inputTokens: 100 + step, outputTokens: 20 },
          },
        },
      );
    }
    batch.push({ type: "RunCompleted", data: { runId, response: `Finished ${task}` } });
    await store.append(id, batch, { expectedVersion: "no_stream" });
  }
  return roots;
};

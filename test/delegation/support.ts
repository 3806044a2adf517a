// Shared by the delegation tests: a runtime on the file's store, tool calls as a model sends them, and readers of what the model saw.
import {
  createRuntime,
  scriptedModel,
  type EventStore,
  type ModelRequest,
  type Runtime,
  type RuntimeOptions,
} from "../../src/index.ts";
import type { ModelTurn } from "../../src/index.ts";
import { afterEach } from "vitest";
import { storeForFile } from "../support/storeForFile.ts";

/** A model turn with one tool call, its arguments as the JSON string a real model sends. */
export const call = (
  name: string,
  args: unknown,
  id = `c_${name}_${Math.random().toString(16).slice(2, 10)}`,
): ModelTurn => ({
  toolCalls: [{ id, name, arguments: typeof args === "string" ? args : JSON.stringify(args) }],
});

export type Handler = (req: ModelRequest) => ModelTurn | Promise<ModelTurn>;

const open: Runtime[] = [];

/** Closes every runtime `runtimeWith` opened (call it from `afterEach`). */
export const closeRuntimes = async () => {
  for (const rt of open.splice(0)) await rt.close();
};

/**
 * A delegation test file's set-up: one fresh store shared by its tests (`set` gets it before the first), and the
 * runtimes each test opened with `runtimeWith` closed after it.
 */
export const delegationFile = (set: (store: EventStore) => void): void => {
  storeForFile(set);
  afterEach(closeRuntimes);
};

/** A runtime whose model asks `handler` (retries and passivation kept short so tests stay fast). */
export const runtimeWith = async (store: EventStore, handler: Handler, extra: Partial<RuntimeOptions> = {}) => {
  const model = scriptedModel(handler);
  const rt = await createRuntime({
    store,
    model,
    ...extra,
    limits: { retryBaseMs: 1, retryMaxMs: 5, passivateAfterMs: 50, ...extra.limits },
  });
  open.push(rt);
  return { rt, model };
};

/** The last message of a request (the user's message on a run's first step, the tool's result after a tool call). */
export const last = (req: ModelRequest) => req.messages.at(-1)!;

/** True on the first model call of a run: the newest message is the one that started it. */
export const isFirstStep = (req: ModelRequest) => last(req).role === "user";

/** How many replies the model has given in this context so far (all runs): 0 on the first call. */
export const repliesSoFar = (req: ModelRequest) => req.messages.filter((m) => m.role === "assistant").length;

/** The contents of every tool result in the request, in order. */
export const toolResults = (req: ModelRequest) => req.messages.flatMap((m) => (m.role === "tool" ? [m.content] : []));

/** The contents of the user messages in the request, in order. */
export const userMessages = (req: ModelRequest) => req.messages.flatMap((m) => (m.role === "user" ? [m.content] : []));

/** The `context_id` a delegation result names. */
export const contextIdIn = (toolResult: string): string => {
  const m = /context_id: ([0-9a-f-]{36});/.exec(toolResult);
  if (!m) throw new Error(`no context_id in tool result: ${toolResult}`);
  return m[1]!;
};

/** The footer every delegation result ends with (DESIGN §5 rule 9). */
export const footer = (agentNumber: number, childId: string) =>
  `\n\n(from A${agentNumber}, context_id: ${childId}; continue it with call_subordinate {"context_id": "${childId}", "reset": false})`;

/** What the model sees for a repairable error of `tool`. */
/** A repairable refusal reaches the model as the tool's result, word for word. */
export const refused = (_tool: string, message: string) => message;

export const typesOf = async (rt: Runtime, id: string) => (await rt.events({ contextId: id })).map((e) => e.type);

export const eventsOf = async <T extends string>(rt: Runtime, id: string, type: T) =>
  (await rt.events({ contextId: id })).filter((e) => e.type === type) as Extract<
    Awaited<ReturnType<Runtime["events"]>>[number],
    { type: T }
  >[];

/** The store, except that an append for which `hold` returns a promise waits for it before going to the database. */
export const holdingStore = (
  store: EventStore,
  hold: (streamId: string, types: string[]) => Promise<void> | undefined,
): EventStore => ({
  sql: store.sql,
  append: async (streamId, events, options) => {
    await hold(
      streamId,
      events.map((e) => e.type),
    );
    return store.append(streamId, events, options);
  },
  readStream: (streamId, fromVersion) => store.readStream(streamId, fromVersion),
  streamVersion: (streamId) => store.streamVersion(streamId),
  readAll: (after, limit) => store.readAll(after, limit),
  iterateAll: (after, pageSize) => store.iterateAll(after, pageSize),
  headPosition: () => store.headPosition(),
  ...(store.settledPosition ? { settledPosition: () => store.settledPosition!() } : {}),
  verify: (options) => store.verify(options),
  subscribe: (after, listener) => store.subscribe(after, listener),
  onAppend: (hook) => store.onAppend(hook),
  close: () => store.close(),
});

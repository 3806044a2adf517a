// The scripted model: the test adapter of the model port, a function or a queue of turns that records every request.
import { ModelError, type ModelPort, type ModelRequest, type ModelTurn } from "./port.ts";

export type ScriptedHandler = (request: ModelRequest) => ModelTurn | Promise<ModelTurn>;

/** One queued step: a turn, a function of the request, or an error the call throws (e.g. a retryable ModelError). */
export type ScriptedTurn = ModelTurn | ScriptedHandler | Error;

export type ScriptedModel = ModelPort & {
  /** Every request, in call order, with copies of its messages and tools as they were at the call. */
  readonly requests: ModelRequest[];
};

export type ScriptedQueue = ScriptedModel & {
  /** How many queued turns have not been used yet. */
  readonly remaining: number;
  /** Throws when turns remain, or when a call came after the queue ran out (even if the caller swallowed it). */
  assertConsumed(): void;
};

/**
 * A model whose replies come from `handler`. A stop (the request's signal) rejects the pending
 * call at once with `ModelError("aborted")`, whatever the handler is still doing.
 *
 * @example
 * const model = scriptedModel((req) => ({ text: `echo: ${req.messages.at(-1)?.content}` }));
 */
export function scriptedModel(handler: ScriptedHandler): ScriptedModel {
  const requests: ModelRequest[] = [];
  return {
    requests,
    call(request) {
      requests.push(snapshot(request));
      return abortable(request.signal, () => handler(request));
    },
  };
}

/**
 * A model that replies with `turns` in order and fails loudly on a call past the end.
 *
 * @example
 * const model = scriptedModel.fromTurns([
 *   { toolCalls: [{ id: "c1", name: "call_subordinate", arguments: '{"message":"go"}' }] },
 *   (req) => ({ text: `done after ${req.messages.length} messages` }),
 * ]);
 * // … run …
 * model.assertConsumed();
 */
scriptedModel.fromTurns = function fromTurns(turns: readonly ScriptedTurn[]): ScriptedQueue {
  const queue = [...turns];
  let calls = 0;
  const { unexpected, ...model } = queuedModel(
    () => ((calls += 1), queue.shift()),
    (request) =>
      `scriptedModel: unexpected model call #${calls} (${turns.length} turn(s) scripted) ` +
      `from context ${request.contextId} (A${request.agentNumber})`,
  );
  return {
    requests: model.requests,
    call: model.call,
    get remaining() {
      return queue.length;
    },
    assertConsumed() {
      if (unexpected.length > 0) throw new Error(unexpected.join("\n"));
      if (queue.length > 0) {
        throw new Error(`scriptedModel: ${queue.length} of ${turns.length} scripted turn(s) were never requested.`);
      }
    },
  };
};

/**
 * The queue both scripted queues share (`fromTurns`, and `scriptByAgent` in actorzero/testing): each call takes its
 * turn from `take`; a call with none (`undefined`) is recorded in `unexpected` as `missed` says, with the request's
 * last message, and throws, so `assertConsumed` fails even when the runtime swallowed the error.
 */
export const queuedModel = (
  take: (request: ModelRequest) => ScriptedTurn | undefined,
  missed: (request: ModelRequest) => string,
): ScriptedModel & { unexpected: string[] } => {
  const unexpected: string[] = [];
  const model = scriptedModel((request) => {
    const next = take(request);
    if (next === undefined) {
      const last = request.messages.at(-1);
      const problem = `${missed(request)}; last message: ${JSON.stringify(last?.content ?? null).slice(0, 200)}`;
      unexpected.push(problem);
      throw new Error(problem);
    }
    if (next instanceof Error) throw next;
    return typeof next === "function" ? next(request) : next;
  });
  return { requests: model.requests, call: model.call, unexpected };
};

/** Short alias of `scriptedModel.fromTurns`. */
export const scriptedTurns = (turns: readonly ScriptedTurn[]): ScriptedQueue => scriptedModel.fromTurns(turns);

const snapshot = (request: ModelRequest): ModelRequest => ({
  ...request,
  messages: structuredClone(request.messages),
  tools: structuredClone(request.tools),
});

const abortError = () => new ModelError("aborted", "The model call was stopped.", false);

const abortable = (signal: AbortSignal, run: () => ModelTurn | Promise<ModelTurn>): Promise<ModelTurn> => {
  if (signal.aborted) return Promise.reject(abortError());
  return new Promise<ModelTurn>((resolve, reject) => {
    const onAbort = () => reject(abortError());
    signal.addEventListener("abort", onAbort, { once: true });
    // `then` of a resolved value also catches a synchronous throw from the handler.
    Promise.resolve()
      .then(run)
      .then(resolve, reject)
      .finally(() => signal.removeEventListener("abort", onAbort));
  });
};

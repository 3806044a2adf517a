// The runtime as an A2A agent: the SDK's request handler interface answered from the runtime and its log.
// Requirements:
// - A message whose id started a run before answers with that run's task (a retry starts nothing).
// - A message starts a run of a root (a new root of the skill `metadata.skill` names, default profile otherwise; or
//   the root its `contextId` names), recorded `via: "a2a"`; the task is that run (task id = run id, context id =
//   the root's id). A message naming the task of a run in flight is an intervention in it.
// - SendMessage answers when the task is terminal or input-required (or at once with `returnImmediately`);
//   SendStreamingMessage and SubscribeToTask stream the task, then a status update per change and the answer as an
//   artifact, each read from the log as its facts arrive, until the task is terminal.
// - GetTask reads the task from the log (any process, after a restart); CancelTask is a stop of the run's tree. Which
//   context a task is in is found by one scan of the log, then remembered (TaskIndex), so polling a task scans nothing.
// - Push notifications, ListTasks and the extended card are refused as unsupported; bad input names its field
//   and writes nothing.
import type {
  AgentCard,
  CancelTaskRequest,
  GetTaskRequest,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
} from "@a2a-js/sdk";
import { Role, TaskState } from "@a2a-js/sdk";
import {
  A2AError,
  ExtendedAgentCardNotConfiguredError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from "@a2a-js/sdk/errors";
import type { A2ARequestHandler, ServerCallContext } from "@a2a-js/sdk/server";
import type { Runtime } from "../runtime/api.ts";
import { ANSWER_ARTIFACT_ID, taskOf, TERMINAL_STATES, textOf } from "./a2aTask.ts";
import { readTraceparent } from "./traceContext.ts";

type Located = { contextId: string; runId: string };

/**
 * Which root context a task (run) id belongs to, remembered once found: that never changes, so a client that polls
 * a task (`GetTask`, as remote subordinates do) finds it without a scan of the log each time. Bounded: the oldest
 * entry goes first.
 */
export class TaskIndex {
  private readonly contexts = new Map<string, string>();
  constructor(private readonly max = 10_000) {}
  get(taskId: string): string | undefined {
    return this.contexts.get(taskId);
  }
  set(taskId: string, contextId: string): void {
    if (this.contexts.size >= this.max && !this.contexts.has(taskId))
      this.contexts.delete(this.contexts.keys().next().value!);
    this.contexts.set(taskId, contextId);
  }
}
/** A refusal of bad input (RuntimeError "invalid") as "nothing found"; anything else goes on. */
const refusedAsNull = (e: unknown): null => {
  if ((e as { reason?: unknown }).reason === "invalid") return null;
  throw e;
};
const isTerminal = (t: Task): boolean => TERMINAL_STATES.includes(t.status!.state);
const isSettled = (t: Task): boolean => isTerminal(t) || t.status!.state === TaskState.TASK_STATE_INPUT_REQUIRED;

/** The headers of the call, as the route put them in the call context's state. */
const headersOf = (context: ServerCallContext): Record<string, string | undefined> =>
  (context.state.get("headers") as Record<string, string | undefined>) ?? {};

export class RuntimeA2AHandler implements A2ARequestHandler {
  constructor(
    private readonly rt: Runtime,
    private readonly card: () => AgentCard,
    private readonly index: TaskIndex = new TaskIndex(),
  ) {}

  getAgentCard = async (): Promise<AgentCard> => this.card();
  getAuthenticatedExtendedAgentCard = async (): Promise<AgentCard> => {
    throw new ExtendedAgentCardNotConfiguredError("this agent has no extended card");
  };

  /** The root and run a task id names (a run id recorded by a RunStarted of a root), or null. */
  private async locate(taskId: string): Promise<Located | null> {
    if (typeof taskId !== "string" || taskId.trim() === "")
      throw new RequestMalformedError("id: a task id is required");
    let contextId = this.index.get(taskId);
    if (contextId === undefined) {
      // An id the runtime refuses (too long, control characters) names no task.
      contextId = (await this.rt.findRun({ runId: taskId }).catch(refusedAsNull))?.contextId;
      if (!contextId) return null;
      this.index.set(taskId, contextId);
    }
    const view = await this.rt.context(contextId);
    return view && view.kind === "root" ? { contextId, runId: taskId } : null;
  }

  /** The task as the log says it now. */
  private async task(at: Located, historyLength?: number): Promise<Task> {
    const events = await this.rt.events({ contextId: at.contextId });
    const pending = (await this.rt.approvals({ contextId: at.contextId })).some((a) => a.status === "pending");
    const task = taskOf(events, at.contextId, at.runId, pending, historyLength);
    if (!task) throw new TaskNotFoundError(`no task ${at.runId}`);
    return task;
  }

  /**
   * The run a message with this id started before, or null: a client that sends a message again under the same id
   * (a retry after it lost the answer, as actorzero's remote subordinates do after a restart) gets that task back.
   */
  private startedBy(messageId: string): Promise<Located | null> {
    return this.rt.findRun({ messageId, via: "a2a" });
  }

  /** Starts (or joins, as an intervention) the run the message asks for. `watch` is set up before the start, so nothing is missed. */
  private async start(params: SendMessageRequest, context: ServerCallContext): Promise<Located> {
    const message: Message | undefined = params.message;
    if (!message) throw new RequestMalformedError("message: required");
    // Sent before (the same message id): the task it started, never a second one.
    const before = message.messageId ? await this.startedBy(message.messageId) : null;
    if (before) return before;
    const text = textOf(message.parts ?? []).trim();
    if (text === "")
      throw new RequestMalformedError(
        "message.parts: at least one non-empty text part is required (this agent reads text only)",
      );
    const meta = { ...(params.metadata ?? {}), ...(message.metadata ?? {}) } as Record<string, unknown>;
    let contextId: string;
    if (message.contextId) {
      const view = await this.rt.context(message.contextId).catch(() => null);
      if (!view || view.kind !== "root")
        throw new RequestMalformedError(`contextId: no conversation ${message.contextId} here`);
      contextId = view.id;
      if (message.taskId) {
        const at = await this.locate(message.taskId);
        if (!at || at.contextId !== contextId)
          throw new TaskNotFoundError(`taskId: no task ${message.taskId} in context ${contextId}`);
        if (isTerminal(await this.task(at)))
          throw new UnsupportedOperationError(
            `taskId: task ${message.taskId} has ended; send without taskId to start a new one`,
          );
      }
    } else {
      if (message.taskId) throw new RequestMalformedError("taskId: a task is continued within its contextId");
      const skill = meta["skill"];
      const profiles = this.rt.profiles().map((p) => p.key);
      if (skill !== undefined && (typeof skill !== "string" || !profiles.includes(skill))) {
        throw new RequestMalformedError(`metadata.skill: one of ${profiles.join(", ")}`);
      }
      const name =
        typeof meta["name"] === "string" && meta["name"].trim() !== "" ? meta["name"].trim().slice(0, 200) : undefined;
      contextId = (await this.rt.createContext({ ...(skill ? { profile: skill } : {}), ...(name ? { name } : {}) })).id;
    }
    const traceparent = readTraceparent(headersOf(context)["traceparent"]);
    const started = await this.rt.start(contextId, text, {
      via: "a2a",
      ...(traceparent ? { traceparent } : {}),
      ...(message.messageId ? { messageId: message.messageId } : {}),
    });
    this.index.set(started.runId, contextId);
    started.ended.catch(() => undefined);
    return { contextId, runId: started.runId };
  }

  /**
   * The task after each change the log brings, first as it is now; ends once it is terminal (or settled, when
   * `untilSettled`). A wake-up per fact of the run's tree (its correlation id is the root run's id).
   */
  private async *watch(at: Located, untilSettled: boolean): AsyncGenerator<Task> {
    let wake: (() => void) | null = null;
    let dirty = true;
    // From the log's head (the default): the first task below is read after the subscription starts.
    const unsubscribe = await this.rt.subscribe((e) => {
      if (e.metadata.correlationId !== at.runId && e.streamId !== at.contextId) return;
      dirty = true;
      wake?.();
    });
    try {
      for (;;) {
        if (!dirty) await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
        dirty = false;
        const task = await this.task(at);
        yield task;
        if (untilSettled ? isSettled(task) : isTerminal(task)) return;
      }
    } finally {
      unsubscribe();
    }
  }

  sendMessage = async (params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> => {
    const at = await this.start(params, context);
    const history = params.configuration?.historyLength;
    if (params.configuration?.returnImmediately) return this.task(at, history);
    for await (const task of this.watch(at, true))
      if (isSettled(task)) return history === undefined ? task : this.task(at, history);
    return this.task(at, history);
  };

  /**
   * The task, then what changed: status updates, and the answer as an artifact before the completed status. A stream
   * that starts the task (`fromStart`) opens with it as accepted (working), even when the log already holds its end.
   */
  private async *updates(at: Located, fromStart: boolean): AsyncGenerator<StreamResponse> {
    let last: TaskState | null = null;
    for await (const task of this.watch(at, false)) {
      if (last === null) {
        last = fromStart ? TaskState.TASK_STATE_WORKING : task.status!.state;
        const opening =
          fromStart && task.status!.state !== last
            ? {
                ...task,
                status: { ...task.status!, state: last, message: undefined },
                artifacts: [],
                history: task.history.filter((m) => m.role !== Role.ROLE_AGENT),
              }
            : task;
        yield { payload: { $case: "task", value: opening } };
        if (opening === task && isTerminal(task)) return;
      }
      if (task.status!.state === last) continue;
      const answer = task.artifacts.find((a) => a.artifactId === ANSWER_ARTIFACT_ID);
      if (answer)
        yield {
          payload: {
            $case: "artifactUpdate",
            value: {
              taskId: task.id,
              contextId: task.contextId,
              artifact: answer,
              append: false,
              lastChunk: true,
              metadata: undefined,
            },
          },
        };
      yield {
        payload: {
          $case: "statusUpdate",
          value: { taskId: task.id, contextId: task.contextId, status: task.status, metadata: undefined },
        },
      };
      last = task.status!.state;
    }
  }

  sendMessageStream = async function* (
    this: RuntimeA2AHandler,
    params: SendMessageRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse> {
    yield* this.updates(await this.start(params, context), true);
  };

  resubscribe = async function* (
    this: RuntimeA2AHandler,
    params: SubscribeToTaskRequest,
  ): AsyncGenerator<StreamResponse> {
    const at = await this.locate(params.id);
    if (!at) throw new TaskNotFoundError(`no task ${params.id}`);
    if (isTerminal(await this.task(at)))
      throw new UnsupportedOperationError(`task ${params.id} has ended; read it with GetTask`);
    yield* this.updates(at, false);
  };

  getTask = async (params: GetTaskRequest): Promise<Task> => {
    const at = await this.locate(params.id);
    if (!at) throw new TaskNotFoundError(`no task ${params.id}`);
    return this.task(at, params.historyLength);
  };

  cancelTask = async (params: CancelTaskRequest): Promise<Task> => {
    const at = await this.locate(params.id);
    if (!at) throw new TaskNotFoundError(`no task ${params.id}`);
    if (isTerminal(await this.task(at))) throw new TaskNotCancelableError(`task ${params.id} has already ended`);
    await this.rt.stop(at.contextId);
    const task = await this.task(at);
    if (!isTerminal(task)) throw new TaskNotCancelableError(`task ${params.id} did not stop`);
    return task;
  };

  listTasks = async (): Promise<never> => {
    throw new UnsupportedOperationError("ListTasks is not supported: read a task with GetTask");
  };
  createTaskPushNotificationConfig = async (): Promise<never> => {
    throw new PushNotificationNotSupportedError(
      "push notifications are not supported: stream with SendStreamingMessage",
    );
  };
  getTaskPushNotificationConfig = this.createTaskPushNotificationConfig;
  listTaskPushNotificationConfigs = this.createTaskPushNotificationConfig;
  deleteTaskPushNotificationConfig = this.createTaskPushNotificationConfig;
}

export { A2AError };

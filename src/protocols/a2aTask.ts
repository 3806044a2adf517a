// An A2A task as the log tells it: a task is one run of a root context, the A2A context id is that context's id.
// Requirements:
// - The task's state is folded from the run's own facts: started → working; a decision awaited anywhere in its
//   tree → input-required; RunCompleted → completed (its response is the `answer` artifact and the agent's
//   message); RunStopped → canceled; RunFailed or RunInterrupted → failed, the reason in the status message.
// - History: the messages that started and joined the run (user role), then the answer (agent role).
// - Pure: the same events give the same task, in any process, before or after a restart.
import { Role, TaskState, type Artifact, type Message, type Part, type Task, type TaskStatus } from "@a2a-js/sdk";
import type { RecordedEvent } from "../events/schema.ts";

export const ANSWER_ARTIFACT_ID = "answer";
export const TERMINAL_STATES: readonly TaskState[] = [
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_REJECTED,
];

export const textPart = (text: string): Part => ({
  content: { $case: "text", value: text },
  metadata: undefined,
  filename: "",
  mediaType: "text/plain",
});

/** The text of a message's text parts, joined; data and file parts are not read (the card accepts text only). */
export const textOf = (parts: readonly Part[]): string =>
  parts
    .map((p) => (p.content?.$case === "text" ? p.content.value : ""))
    .filter((t) => t !== "")
    .join("\n");

const message = (role: Role, messageId: string, contextId: string, taskId: string, text: string): Message => ({
  messageId,
  contextId,
  taskId,
  role,
  parts: [textPart(text)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

export const answerArtifact = (text: string): Artifact => ({
  artifactId: ANSWER_ARTIFACT_ID,
  name: "answer",
  description: "The agent's final response.",
  parts: [textPart(text)],
  metadata: undefined,
  extensions: [],
});

export const status = (state: TaskState, at: string, note?: Message): TaskStatus => ({
  state,
  message: note,
  timestamp: at,
});

/** What the run's facts say of it: its state, when, and the answer or the reason. */
export type RunState = { state: TaskState; at: string; answer: string | null; reason: string | null };

/** The state of run `runId` after `events` (its context's stream); `awaitingDecision`: an approval pending in its tree. */
export const runStateOf = (
  events: readonly RecordedEvent[],
  runId: string,
  awaitingDecision: boolean,
): RunState | null => {
  let state: RunState | null = null;
  for (const e of events) {
    if (!("runId" in e.data) || e.data.runId !== runId) continue;
    switch (e.type) {
      case "RunStarted":
        state = { state: TaskState.TASK_STATE_WORKING, at: e.recordedAt, answer: null, reason: null };
        break;
      case "RunCompleted":
        state = { state: TaskState.TASK_STATE_COMPLETED, at: e.recordedAt, answer: e.data.response, reason: null };
        break;
      case "RunStopped":
        state = {
          state: TaskState.TASK_STATE_CANCELED,
          at: e.recordedAt,
          answer: null,
          reason: `stopped by the ${e.data.by}`,
        };
        break;
      case "RunFailed":
        state = {
          state: TaskState.TASK_STATE_FAILED,
          at: e.recordedAt,
          answer: null,
          reason: `${e.data.reason}: ${e.data.message}`,
        };
        break;
      case "RunInterrupted":
        state = {
          state: TaskState.TASK_STATE_FAILED,
          at: e.recordedAt,
          answer: null,
          reason: `interrupted${e.data.reason ? `: ${e.data.reason}` : ""}`,
        };
        break;
      default:
        break;
    }
  }
  if (state && state.state === TaskState.TASK_STATE_WORKING && awaitingDecision)
    return { ...state, state: TaskState.TASK_STATE_INPUT_REQUIRED };
  return state;
};

/** The A2A task for run `runId` of root `contextId`, or null when that context has no such run. */
export const taskOf = (
  events: readonly RecordedEvent[],
  contextId: string,
  runId: string,
  awaitingDecision: boolean,
  historyLength?: number,
): Task | null => {
  const run = runStateOf(events, runId, awaitingDecision);
  if (!run) return null;
  const history: Message[] = [];
  for (const e of events) {
    if ((e.type === "MessageReceived" || e.type === "InterventionReceived") && e.data.runId === runId) {
      history.push(message(Role.ROLE_USER, e.eventId, contextId, runId, e.data.text));
    }
  }
  const note =
    run.answer !== null
      ? message(Role.ROLE_AGENT, `${runId}-answer`, contextId, runId, run.answer)
      : run.reason !== null
        ? message(Role.ROLE_AGENT, `${runId}-end`, contextId, runId, run.reason)
        : run.state === TaskState.TASK_STATE_INPUT_REQUIRED
          ? message(
              Role.ROLE_AGENT,
              `${runId}-approval`,
              contextId,
              runId,
              "A tool call awaits a person's decision (actorzero approve / reject).",
            )
          : undefined;
  if (note && run.answer !== null) history.push(note);
  const shown = historyLength === undefined ? history : historyLength === 0 ? [] : history.slice(-historyLength);
  return {
    id: runId,
    contextId,
    status: status(run.state, run.at, note),
    artifacts: run.answer !== null ? [answerArtifact(run.answer)] : [],
    history: shown,
    metadata: undefined,
  };
};

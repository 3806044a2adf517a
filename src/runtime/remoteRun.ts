// A remote subordinate's run (a context of kind `remote`): its message goes to another A2A agent as a task, and the
// run waits on that task instead of running a message loop (docs/ecosystem.md, "Remote subordinates").
//
// Requirements:
// - The run's start records RemoteTaskSent (commands.ts) with the A2A message id it goes under (the run id), before
//   anything is sent; the message is sent with `returnImmediately`, and the task id the agent answers with is
//   recorded (RemoteTaskAccepted). From then on the run only reads the task (`tasks/get`, every `remotePollMs`).
// - A continued child's task goes to the agent's A2A context of its earlier task (RemoteTaskSent's remoteContextId).
// - Never sent twice: a run resumed after a restart with its task id recorded only reads that task; one cut off
//   between the two records sends the same message, under the same message id, again (an agent that deduplicates
//   message ids, as actorzero's does, answers with the task it already started).
// - The task's end is the run's: completed → RunCompleted with its answer (the artifacts' text, else the status
//   message); failed, rejected or canceled there → RunFailed `remote_error` with the agent's reason. An agent that
//   cannot be reached (`TRIES` times in a row), a refusal of the request, or a credential variable that is not set
//   → RunFailed `remote_error`: the parent's model gets it as a repairable tool error, like a local child's failure.
// - A stop cancels the remote task (`tasks/cancel`) before RunStopped is recorded; a send in flight is let finish
//   first, so its task is known and cancelled. A close (which records the run as interrupted) cancels it too, but
//   cuts a send in flight off rather than wait for it. A crash cancels nothing: the restart resumes the run and
//   reads the task.
// - Credentials: the value of the environment variable the profile names, read at each request, sent only as the
//   Authorization header; the variable is registered as secret, so its value is redacted from what is recorded.
// - The caller's trace (the run start's `traceparent`) goes with every request.
import { type Client } from "@a2a-js/sdk/client";
import { TaskState, type Task } from "@a2a-js/sdk";
import type { DataOf, DomainEvent, RecordedEvent } from "../events/schema.ts";
import { markSecretEnv, redactSecrets } from "../events/redact.ts";
import type { RunHandle } from "../actors/runHandle.ts";
import type { RemoteAgent } from "../profiles/profiles.ts";
import { a2aClient, partsText, stateName, TERMINAL, userMessage } from "../remote/a2aClient.ts";
import type { ContextSession } from "./contextSession.ts";
import type { EventStore } from "../events/store.ts";
import type { Configuration } from "./configuration.ts";

/** Requests in a row that may fail (the agent down, a network error) before the run fails. */
const TRIES = 5;
/** How long one request may take; a send in flight at a stop is waited for this long at most. */
const REQUEST_TIMEOUT_MS = 30_000;

class RemoteFailure extends Error {}

/** The facts of the run `runId` in `stream`: what was sent, and what the agent answered. */
const recordedTask = (stream: readonly RecordedEvent[], runId: string) => {
  let sent: DataOf<"RemoteTaskSent"> | null = null;
  let accepted: DataOf<"RemoteTaskAccepted"> | null = null;
  let text = "";
  let traceparent: string | undefined;
  for (const e of stream) {
    if (!("runId" in e.data) || e.data.runId !== runId) continue;
    if (e.type === "MessageReceived") text = e.data.text;
    else if (e.type === "RunStarted") traceparent = e.metadata.traceparent;
    else if (e.type === "RemoteTaskSent") sent = e.data;
    else if (e.type === "RemoteTaskAccepted") accepted = e.data;
  }
  return { sent, accepted, text, traceparent };
};

/** The headers of every request: the credential (when the profile names its variable) and the caller's trace. */
const headersFor = (remote: RemoteAgent, traceparent: string | undefined) => (): Record<string, string> => {
  const headers: Record<string, string> = traceparent ? { traceparent } : {};
  if (remote.credentialsEnv === undefined) return headers;
  const value = process.env[remote.credentialsEnv];
  if (value === undefined || value === "")
    throw new RemoteFailure(
      `the environment variable ${remote.credentialsEnv} (the credentials of ${remote.url}) is not set`,
    );
  return { ...headers, authorization: `Bearer ${value}` };
};

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });

/** The answer of a completed task: its artifacts' text, else its status message's. */
const answerOf = (task: Task): string => {
  const fromArtifacts = task.artifacts
    .map((a) => partsText(a.parts))
    .filter((t) => t !== "")
    .join("\n");
  return fromArtifacts !== "" ? fromArtifacts : partsText(task.status?.message?.parts ?? []);
};

/** The run's end for a terminal task. */
const endOf = (runId: RunHandle["runId"], task: Task, url: string): DomainEvent => {
  const state = task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED;
  if (state === TaskState.TASK_STATE_COMPLETED)
    return { type: "RunCompleted", data: { runId, response: answerOf(task) } };
  const why = partsText(task.status?.message?.parts ?? []);
  return {
    type: "RunFailed",
    data: {
      runId,
      reason: "remote_error",
      message: `The task ${task.id} at ${url} ended ${stateName(state)}${why ? `: ${why}` : ""}`,
    },
  };
};

/** Sends or follows the run's remote task until it ends; resolves with the facts of its end (RunCompleted or RunFailed). */
export const followRemoteTask = async (
  parts: { readonly config: Configuration; readonly store: EventStore },
  ac: ContextSession,
  handle: RunHandle,
  signal: AbortSignal,
): Promise<RecordedEvent[]> => {
  const profile = parts.config.profiles.get(ac.view.profile);
  const remote = profile?.remote;
  const meta = { correlationId: handle.correlationId, causationId: handle.runId };
  const recorded = recordedTask(await parts.store.readStream(ac.id), handle.runId);
  const end = (event: DomainEvent) =>
    ac.writer.exclusive(async (append) => (ac.view.currentRunId === handle.runId ? append([event], meta) : []));
  const fail = (message: string) =>
    end({
      type: "RunFailed",
      data: { runId: handle.runId, reason: "remote_error", message: redactSecrets(message, secrets(remote)) },
    });
  if (!remote || !recorded.sent)
    return fail(`Profile '${ac.view.profile}' has no remote agent configured here (its run cannot reach it).`);
  // A stop lets a send in flight finish (its task is then known and cancelled); a close or the timeout cuts it off.
  const sending = new AbortController();
  const cutOff = () => {
    if (handle.stopRequestedBy === null) sending.abort(signal.reason);
  };
  signal.addEventListener("abort", cutOff, { once: true });
  let client: Client | null = null;
  const headers = headersFor(remote, recorded.traceparent);
  const connect = async () =>
    (client ??= await a2aClient(
      remote.url,
      headers,
      AbortSignal.any([sending.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
    ));
  /** `fn` retried while the agent cannot be reached; a refusal (a JSON-RPC error) or a missing credential fails at once. */
  const attempt = async <T>(what: string, fn: (c: Client) => Promise<T>, until: AbortSignal): Promise<T> => {
    for (let i = 1; ; i++) {
      try {
        return await fn(await connect());
      } catch (e) {
        if (e instanceof RemoteFailure || until.aborted || i >= TRIES || !unreachable(e)) {
          throw e instanceof RemoteFailure
            ? e
            : new RemoteFailure(`${what} ${remote.url} failed: ${(e as Error).message}`);
        }
        client = null;
        await sleep(Math.min(parts.config.limits.remotePollMs * 2 ** i, 10_000), until);
      }
    }
  };
  try {
    let taskId = recorded.accepted?.taskId ?? null;
    // Stopped before anything was sent: nothing to send, nothing to cancel.
    if (taskId === null && signal.aborted) throw signal.reason ?? new Error("stopped");
    if (taskId === null) {
      const params = {
        tenant: "",
        message: userMessage(recorded.text, recorded.sent.messageId, recorded.sent.remoteContextId ?? ""),
        configuration: {
          acceptedOutputModes: ["text/plain"],
          taskPushNotificationConfig: undefined,
          returnImmediately: true,
        },
        metadata: recorded.sent.skill ? { skill: recorded.sent.skill } : undefined,
      };
      const sendSignal = AbortSignal.any([sending.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]);
      const answer = await attempt(
        "Sending the task to",
        (c) => c.sendMessage(params, { signal: sendSignal }),
        sending.signal,
      );
      // An agent that answers with a message rather than a task has answered already.
      if (!("status" in answer))
        return end({ type: "RunCompleted", data: { runId: handle.runId, response: partsText(answer.parts) } });
      taskId = answer.id;
      await ac.writer.append(
        [
          {
            type: "RemoteTaskAccepted",
            data: {
              runId: handle.runId,
              taskId,
              remoteContextId: answer.contextId,
              state: stateName(answer.status!.state),
            },
          },
        ],
        meta,
      );
      if (TERMINAL.includes(answer.status!.state)) return end(endOf(handle.runId, answer, remote.url));
    }
    for (;;) {
      if (signal.aborted) break;
      const task = await attempt(
        "Reading the task at",
        (c) => c.getTask({ tenant: "", id: taskId!, historyLength: 0 }, { signal }),
        signal,
      ).catch((e: unknown) => {
        if (signal.aborted) return null;
        throw e;
      });
      if (task && TERMINAL.includes(task.status!.state)) return end(endOf(handle.runId, task, remote.url));
      await sleep(parts.config.limits.remotePollMs, signal);
    }
    // Stopped or closed: the remote task is cancelled first (a closed run is recorded as interrupted: nothing goes on).
    {
      const cancel = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
      await attempt(
        "Cancelling the task at",
        (c) => c.cancelTask({ tenant: "", id: taskId!, metadata: undefined }, { signal: cancel }),
        cancel,
      ).catch(() => undefined);
    }
    throw signal.reason ?? new Error("stopped");
  } catch (e) {
    if (signal.aborted) throw e;
    if (e instanceof RemoteFailure) return fail(e.message);
    throw e;
  } finally {
    signal.removeEventListener("abort", cutOff);
  }
};

/** A network failure (the agent down or slow), as opposed to an answer that refuses. */
const unreachable = (e: unknown): boolean => {
  const name = (e as Error)?.name ?? "";
  return (
    e instanceof TypeError ||
    name === "TimeoutError" ||
    name === "AbortError" ||
    /fetch failed|ECONNREFUSED|ECONNRESET|socket|network|HTTP error/i.test(String((e as Error)?.message))
  );
};

/** The credential values to redact from a message (the variable is registered as secret too). */
const secrets = (remote: RemoteAgent | undefined): string[] => {
  if (!remote?.credentialsEnv) return [];
  markSecretEnv(remote.credentialsEnv);
  const v = process.env[remote.credentialsEnv];
  return v ? [v] : [];
};

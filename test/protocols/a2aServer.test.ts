// The runtime as an A2A agent under serve, driven by the A2A SDK's own client (JSON-RPC): card, send, stream,
// get, cancel, and a run parked awaiting approval shown as input-required.
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { TaskState, type StreamResponse, type Task } from "@a2a-js/sdk";
import type { ModelRequest } from "../../src/index.ts";
import { a2aClient, userMessage } from "../../src/protocols/a2aClient.ts";
import { textOf } from "../../src/protocols/a2aTask.ts";
import { deployTool } from "../support/approvalTools.ts";
import { gate, served, type Served } from "../server/support.ts";

let open: Served | null = null;
afterEach(async () => {
  await open?.close();
  open = null;
});

const lastUserText = (req: ModelRequest): string =>
  String(req.messages.filter((m) => m.role === "user").at(-1)?.content ?? "");
const send = (text: string, extra: { contextId?: string; skill?: string; returnImmediately?: boolean } = {}) => ({
  tenant: "",
  message: userMessage(text, randomUUID(), extra.contextId ?? ""),
  configuration: extra.returnImmediately
    ? { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true }
    : undefined,
  metadata: extra.skill ? { skill: extra.skill } : undefined,
});
const asTask = (r: unknown): Task => {
  expect((r as Task).status).toBeDefined();
  return r as Task;
};
/** A model call that never answers: it ends only when the run is stopped. */
const untilStopped = (req: ModelRequest) =>
  new Promise<never>((_, reject) => req.signal.addEventListener("abort", () => reject(req.signal.reason)));

describe("when another agent reaches the runtime over A2A", () => {
  it("publishes an agent card with one skill per enabled profile", async () => {
    open = await served(() => ({ text: "unused" }));
    const res = await fetch(`${open.url}/.well-known/agent-card.json`);
    expect(res.status).toBe(200);
    const card = (await res.json()) as {
      skills: { id: string }[];
      supportedInterfaces: { url: string; protocolBinding: string }[];
      capabilities: { streaming: boolean };
    };
    expect(card.skills.map((s) => s.id).sort()).toEqual(
      open.rt
        .profiles()
        .map((p) => p.key)
        .sort(),
    );
    expect(card.supportedInterfaces[0]).toMatchObject({ url: `${open.url}/a2a`, protocolBinding: "JSONRPC" });
    expect(card.capabilities.streaming).toBe(true);
  });

  it("runs a message as a task of a root, answers with the artifact, and continues the same context", async () => {
    open = await served((req) => ({
      text: `${req.profile}: ${lastUserText(req)} (${req.messages.filter((m) => m.role === "user").length})`,
    }));
    const client = await a2aClient(open.url);
    const first = asTask(await client.sendMessage(send("map the moon", { skill: "researcher" })));
    expect(first.status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(first.artifacts[0]!.parts)).toBe("researcher: map the moon (1)");
    expect(await open.rt.context(first.contextId)).toMatchObject({ kind: "root", profile: "researcher" });
    const received = (await open.rt.events({ contextId: first.contextId })).find((e) => e.type === "MessageReceived");
    expect(received?.data).toMatchObject({ runId: first.id, via: "a2a", sender: "user" });
    const second = asTask(await client.sendMessage(send("and the sun", { contextId: first.contextId })));
    expect(second.contextId).toBe(first.contextId);
    expect(second.id).not.toBe(first.id);
    expect(textOf(second.artifacts[0]!.parts)).toBe("researcher: and the sun (2)");
  });

  it("streams the task to completion: the task, the answer as an artifact, then completed", async () => {
    open = await served((req) => ({ text: `streamed ${lastUserText(req)}` }));
    const client = await a2aClient(open.url);
    const seen: StreamResponse["payload"][] = [];
    for await (const r of client.sendMessageStream(send("hello"))) seen.push(r.payload);
    expect(seen[0]?.$case).toBe("task");
    const artifact = seen.find((p) => p?.$case === "artifactUpdate");
    expect(artifact?.$case === "artifactUpdate" && textOf(artifact.value.artifact!.parts)).toBe("streamed hello");
    const last = seen.at(-1);
    expect(last?.$case === "statusUpdate" && last.value.status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it("cancels a task mid-run as a stop, and the stream ends canceled", async () => {
    const called = gate();
    open = await served((req) => {
      called.open();
      return untilStopped(req);
    });
    const client = await a2aClient(open.url);
    const stream = client.sendMessageStream(send("long job"));
    const first = await stream.next();
    const payload = first.value?.payload;
    const task = payload?.$case === "task" ? payload.value : null;
    expect(task?.status!.state).toBe(TaskState.TASK_STATE_WORKING);
    await called.opened;
    const canceled = await client.cancelTask({ tenant: "", id: task!.id, metadata: undefined });
    expect(canceled.status!.state).toBe(TaskState.TASK_STATE_CANCELED);
    const rest: StreamResponse["payload"][] = [];
    for await (const r of { [Symbol.asyncIterator]: () => stream }) rest.push(r.payload);
    const last = rest.at(-1);
    expect(last?.$case === "statusUpdate" && last.value.status!.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await open.rt.context(task!.contextId))?.status).toBe("stopped");
    await expect(client.cancelTask({ tenant: "", id: task!.id, metadata: undefined })).rejects.toThrow(/already ended/);
  });

  it("gets a finished task from the log, and refuses an unknown one", async () => {
    open = await served(() => ({ text: "done" }));
    const client = await a2aClient(open.url);
    const sent = asTask(await client.sendMessage(send("finish this")));
    const got = await client.getTask({ tenant: "", id: sent.id });
    expect(got).toMatchObject({ id: sent.id, contextId: sent.contextId });
    expect(got.status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(got.history.map((m) => textOf(m.parts))).toEqual(["finish this", "done"]);
    await expect(client.getTask({ tenant: "", id: randomUUID() })).rejects.toThrow(/no task/);
  });

  it("shows a run parked awaiting approval as input-required, and completed once approved", async () => {
    open = await served(
      (req) =>
        req.messages.some((m) => m.role === "tool")
          ? { text: "deployed it" }
          : { toolCalls: [{ id: "c1", name: "deploy", arguments: { env: "prod" } }] },
      {},
      { tools: [deployTool()] },
    );
    const client = await a2aClient(open.url);
    const parked = asTask(await client.sendMessage(send("deploy to prod")));
    expect(parked.status!.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const sub = client.resubscribeTask({ tenant: "", id: parked.id });
    const first = (await sub.next()).value!.payload;
    expect(first?.$case === "task" && first.value.status!.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const [pending] = await open.rt.approvals({ contextId: parked.contextId });
    await open.rt.approve(pending!.approvalId, { by: "tester" });
    const states: TaskState[] = [];
    for await (const r of { [Symbol.asyncIterator]: () => sub })
      if (r.payload?.$case === "statusUpdate") states.push(r.payload.value.status!.state);
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    expect((await client.getTask({ tenant: "", id: parked.id })).status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it("sits behind the server's token", async () => {
    open = await served(() => ({ text: "ok" }), { token: "s3cret" });
    await expect(a2aClient(open.url)).rejects.toThrow();
    const client = await a2aClient(open.url, () => ({ authorization: "Bearer s3cret" }));
    expect(asTask(await client.sendMessage(send("hi"))).status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it("answers the v0.3 method names too (message/send, tasks/get) for a client that sends no A2A-Version", async () => {
    open = await served(() => ({ text: "old style" }));
    const rpc = async (method: string, params: unknown) => {
      const res = await fetch(`${open!.url}/a2a`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      });
      return (await res.json()) as {
        result?: { id: string; kind: string; status: { state: string } };
        error?: { message: string };
      };
    };
    const sent = await rpc("message/send", {
      message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "hi" }] },
    });
    expect(sent.result).toMatchObject({ kind: "task", status: { state: "completed" } });
    const got = await rpc("tasks/get", { id: sent.result!.id });
    expect(got.result?.status.state).toBe("completed");
    expect((await rpc("tasks/get", { id: randomUUID() })).error?.message).toMatch(/no task/);
  });
});

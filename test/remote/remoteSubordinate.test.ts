// A profile that is another A2A agent: call_subordinate to it sends an A2A task to that agent (here another runtime
// served over real HTTP with a token), records the child as a `remote` context with the task id, and returns the answer.
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { createRuntime, ModelError, scriptedModel, type ModelRequest, type Runtime } from "../../src/index.ts";
import { a2aClient, userMessage } from "../../src/protocols/a2aClient.ts";
import { freshPgliteStore, type FreshPgliteStore } from "../support/pglite.ts";
import { auditRuns } from "../../src/projections/auditReport.ts";
import { paintFor } from "../../src/cli/ansi.ts";
import { auditText } from "../../src/cli/auditText.ts";
import { TreeFold } from "../../src/server/treeFold.ts";
// @ts-expect-error: the page's plain-JS module has no types
import { timelineRows } from "../../src/server/web/timelineView.js";
import { gate, served, type Served } from "../server/support.ts";

const TOKEN = "remote-test-token-5f1c9a";
const lastUser = (req: ModelRequest): string =>
  String(req.messages.filter((m) => m.role === "user").at(-1)?.content ?? "");
const toolResult = (req: ModelRequest): string | null => {
  const last = req.messages.at(-1);
  return last?.role === "tool" ? String(last.content) : null;
};

/** A profiles folder with `far`, a remote profile pointing at `url`. */
const remoteProfiles = (remote: Record<string, unknown>): string => {
  const dir = mkdtempSync(join(tmpdir(), "az-remote-"));
  mkdirSync(join(dir, "far"));
  writeFileSync(
    join(dir, "far", "profile.json"),
    JSON.stringify({ title: "Far", description: "An agent in another service.", remote }),
  );
  return dir;
};

/** A0 delegates its message to `far`, then answers with what came back; after an error it calls once more. */
const delegatingModel = () =>
  scriptedModel((req) => {
    const result = toolResult(req);
    const calls = req.messages.filter((m) => m.role === "tool").length;
    if (result !== null && (calls > 1 || !/failed/.test(result))) return { text: `A0 got: ${result}` };
    const task = String(req.messages.find((m) => m.role === "user")?.content ?? "");
    return {
      toolCalls: [
        {
          id: `d${calls + 1}`,
          name: "call_subordinate",
          arguments: { message: calls === 0 ? task : `${task} (again)`, profile: "far" },
        },
      ],
    };
  });
/** A model call that never answers: it ends only when the run is stopped. */
const untilStopped = (req: ModelRequest) =>
  new Promise<never>((_, reject) => req.signal.addEventListener("abort", () => reject(req.signal.reason)));

let remote: Served | null = null;
let local: { rt: Runtime; store: FreshPgliteStore } | null = null;
afterEach(async () => {
  await local?.rt.close();
  await local?.store.close();
  await remote?.close();
  local = remote = null;
  delete process.env["FAR_TOKEN"];
});

const remoteLimits = { limits: { retryBaseMs: 1, retryMaxMs: 5, passivateAfterMs: 50, modelRetries: 0 } };

const localRuntime = async (remoteConfig: Record<string, unknown>) => {
  const store = await freshPgliteStore();
  const rt = await createRuntime({
    store,
    model: delegatingModel(),
    profiles: [remoteProfiles(remoteConfig)],
    limits: { remotePollMs: 20, retryBaseMs: 1, retryMaxMs: 5 },
  });
  local = { rt, store };
  return rt;
};

describe("when A0 delegates to a remote profile", () => {
  it("sends the message as an A2A task, records the child as remote with its task id, and returns the answer", async () => {
    remote = await served((req) => ({ text: `${req.profile} answers: ${lastUser(req)}` }), { token: TOKEN });
    process.env["FAR_TOKEN"] = TOKEN;
    const rt = await localRuntime({ url: remote.url, skill: "researcher", credentialsEnv: "FAR_TOKEN" });
    const root = await rt.createContext();
    const outcome = await rt.send(root.id, "map the moon");
    expect(outcome.status).toBe("completed");
    expect(outcome.response).toContain("A0 got: researcher answers: map the moon");
    const child = (await rt.contexts({ rootContextId: root.id })).find((c) => c.id !== root.id)!;
    expect(child).toMatchObject({ kind: "remote", profile: "far", status: "idle" });
    expect(child.remote).toMatchObject({ url: remote.url, skill: "researcher" });
    // The remote side ran exactly one root for it, as a task whose id the child recorded.
    const theirs = await remote.rt.contexts();
    expect(theirs).toHaveLength(1);
    expect(theirs[0]).toMatchObject({ profile: "researcher", status: "idle" });
    expect(child.remote!.taskId).toBe(theirs[0]!.lastRun!.runId);
    // The audit, the CLI's audit text, the page's tree rows and its timeline show where it ran and the task id.
    const runs = auditRuns(await rt.events({ contextId: child.id }));
    expect(runs[0]!.entries.find((e) => e.kind === "remote_task")).toMatchObject({
      url: remote.url,
      skill: "researcher",
      taskId: child.remote!.taskId,
    });
    const text = auditText(await rt.audit(root.id), {
      max: 200,
      paint: paintFor({ isTTY: false }, {}),
    });
    expect(text).toContain(`remote task ${child.remote!.taskId} at ${remote.url} (skill researcher)`);
    const fold = new TreeFold();
    fold.apply(await rt.events({ limit: 10_000 }));
    expect(fold.rows().find((r) => r.id === child.id)?.remote).toMatchObject({
      url: remote.url,
      taskId: child.remote!.taskId,
    });
    const timeline = timelineRows({ runs }) as { kind: string; text: string }[];
    expect(timeline.find((r) => r.kind === "remote_task")?.text).toBe(
      `remote task ${child.remote!.taskId} at ${remote.url} · skill researcher`,
    );
    // The credential never reaches the log.
    const all = JSON.stringify(await rt.events({}));
    expect(all).not.toContain(TOKEN);
  });
});

describe("when the remote task fails", () => {
  it("gives the parent's model the failure as a repairable tool error, and a second call continues the remote conversation", async () => {
    let calls = 0;
    remote = await served(
      (req) => {
        calls += 1;
        if (calls === 1) throw new ModelError("server_error", "the remote model is down", false);
        return {
          text: `second try: ${lastUser(req)} (${req.messages.filter((m) => m.role === "user").length} messages)`,
        };
      },
      { token: TOKEN },
      remoteLimits,
    );
    process.env["FAR_TOKEN"] = TOKEN;
    const rt = await localRuntime({ url: remote.url, credentialsEnv: "FAR_TOKEN" });
    const root = await rt.createContext();
    const outcome = await rt.send(root.id, "count the stars");
    expect(outcome.status).toBe("completed");
    const failed = (await rt.events({ contextId: root.id })).find((e) => e.type === "ToolFailed");
    expect(failed?.data).toMatchObject({ name: "call_subordinate", repairable: true });
    expect(failed?.type === "ToolFailed" && failed.data.error).toMatch(
      /failed \(remote_error\): The task .* ended failed/,
    );
    // The second call continued the same child, and its task the same remote conversation.
    expect(outcome.response).toContain("second try: count the stars (again) (2 messages)");
    const children = (await rt.contexts({ rootContextId: root.id })).filter((c) => c.id !== root.id);
    expect(children).toHaveLength(1);
    expect(await remote.rt.contexts()).toHaveLength(1);
  });

  it("fails the child, naming the variable but never its value, when the credential variable is not set", async () => {
    remote = await served(() => ({ text: "unused" }), { token: TOKEN });
    const rt = await localRuntime({ url: remote.url, credentialsEnv: "FAR_TOKEN" });
    const root = await rt.createContext();
    const outcome = await rt.send(root.id, "anything");
    expect(outcome.response).toContain("FAR_TOKEN");
    expect(outcome.response).toMatch(/is not set/);
    expect(await remote.rt.contexts()).toHaveLength(0);
  });
});

describe("when the parent's tree is stopped during a remote delegation", () => {
  it("cancels the remote task (tasks/cancel), and both sides record the stop", async () => {
    const called = gate();
    remote = await served(
      (req) => {
        called.open();
        return untilStopped(req);
      },
      { token: TOKEN },
    );
    process.env["FAR_TOKEN"] = TOKEN;
    const rt = await localRuntime({ url: remote.url, credentialsEnv: "FAR_TOKEN" });
    const root = await rt.createContext();
    const started = await rt.start(root.id, "a long job");
    await called.opened;
    await rt.stop(root.id);
    expect((await started.ended).status).toBe("stopped");
    const child = (await rt.contexts({ rootContextId: root.id })).find((c) => c.id !== root.id)!;
    expect(child).toMatchObject({ kind: "remote", status: "stopped" });
    const [theirs] = await remote.rt.contexts();
    expect(theirs?.status).toBe("stopped");
    expect(theirs?.lastRun?.runId).toBe(child.remote?.taskId);
  });
});

describe("when a remote profile is misconfigured", () => {
  it.each([
    [{ url: "http://user:secret@127.0.0.1:1" }, /remote\.url.*no credentials in the URL/],
    [{ url: "ftp://127.0.0.1:1" }, /remote\.url.*http\(s\) URL/],
    [{ url: "http://127.0.0.1:1", token: "x" }, /remote.*token/],
    [{ url: "http://127.0.0.1:1", credentialsEnv: "NOT A NAME" }, /remote\.credentialsEnv/],
  ])("refuses %j at start with one line naming the field", async (config, message) => {
    const store = await freshPgliteStore();
    try {
      const error = await createRuntime({ store, model: delegatingModel(), profiles: [remoteProfiles(config)] }).then(
        () => null,
        (e: Error) => e,
      );
      expect(error?.message).toMatch(message);
      expect(error?.message).not.toContain("\n");
      expect(await store.headPosition()).toBe(0);
    } finally {
      await store.close();
    }
  });
});

describe("when an A2A client sends the same message id twice", () => {
  it("answers the second with the task the first started, and runs it once", async () => {
    remote = await served((req) => ({ text: `once: ${lastUser(req)}` }));
    const client = await a2aClient(remote.url);
    const id = randomUUID();
    const send = () =>
      client.sendMessage({
        tenant: "",
        message: userMessage("do it once", id),
        configuration: undefined,
        metadata: undefined,
      });
    const first = (await send()) as { id: string };
    const second = (await send()) as { id: string };
    expect(second.id).toBe(first.id);
    const started = (await remote.rt.events({})).filter((e) => e.type === "RunStarted");
    expect(started).toHaveLength(1);
  });
});

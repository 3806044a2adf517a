// Two runtimes in two processes, each with its own log: A0 of the first delegates to `far`, a remote profile served
// (A2A, with a token) by the second. The answer returns; a stop of the first's tree cancels the second's task; a
// SIGKILL of the first mid-delegation, then a reopen, resumes waiting on the same task (the second runs it once), even
// when the kill came after the agent took the message but before its task id was recorded (sent again, same id).
import { type ChildProcess, spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TaskState } from "@a2a-js/sdk";
import { createRuntime, openPgliteStore, scriptedModel, type ModelRequest } from "../../src/index.ts";
import { a2aClient } from "../../src/protocols/a2aClient.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";

const TOKEN = "two-process-token-8d2e41c7";
const children: ChildProcess[] = [];
const servers: Server[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  for (const s of servers.splice(0)) s.closeAllConnections();
  for (const d of dirs.splice(0)) await removeDir(d);
});

/** A child process of ours (tsx), with its stdout read line by line: `line(prefix)` resolves with the next line so prefixed. */
const launch = (script: string, args: string[], env: Record<string, string> = {}) => {
  const child = spawn(process.execPath, ["--import", "tsx", new URL(script, import.meta.url).pathname, ...args], {
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, ...env },
  });
  children.push(child);
  const lines: string[] = [];
  const waiting: { prefix: string; resolve: (l: string) => void }[] = [];
  let buf = "";
  child.stdout!.on("data", (d: Buffer) => {
    buf += d.toString();
    for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
      const l = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const w = waiting.findIndex((x) => l.startsWith(x.prefix));
      if (w >= 0) waiting.splice(w, 1)[0]!.resolve(l);
      else lines.push(l);
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const line = (prefix: string) =>
    new Promise<string>((resolve, reject) => {
      const seen = lines.findIndex((l) => l.startsWith(prefix));
      if (seen >= 0) return resolve(lines.splice(seen, 1)[0]!);
      waiting.push({ prefix, resolve });
      void exited.then((code) => reject(new Error(`${script} exited (${code}) before printing '${prefix}'`)));
    });
  return { child, line, exited, send: (l: string) => child.stdin!.write(`${l}\n`) };
};

const startRemote = async () => {
  const dataDir = await copyPgliteTemplate();
  dirs.push(dataDir);
  const remote = launch("./remoteAgent.ts", [dataDir, TOKEN]);
  const url = (await remote.line("ready ")).slice("ready ".length);
  return { ...remote, url, dataDir };
};

const profilesFor = (url: string): string => {
  const dir = mkdtempSync(join(tmpdir(), "az-far-"));
  dirs.push(dir);
  mkdirSync(join(dir, "far"));
  writeFileSync(
    join(dir, "far", "profile.json"),
    JSON.stringify({ title: "Far", remote: { url, credentialsEnv: "FAR_TOKEN" } }),
  );
  return dir;
};

/**
 * A proxy to `target` on real HTTP: it forwards every request (the agent card rewritten to name the proxy), except that
 * the answer to the first SendMessage is held back, never delivered: the agent has the message, its sender never
 * learns the task id. `forwarded` resolves once that first send reached the agent and it answered.
 */
const swallowingProxy = async (target: string) => {
  let swallowed = false;
  let forwarded!: () => void;
  const firstSendForwarded = new Promise<void>((resolve) => (forwarded = resolve));
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString();
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(([k]) => !["host", "content-length", "connection"].includes(k)) as [
        string,
        string,
      ][],
    );
    const answer = await fetch(`${target}${req.url}`, { method: req.method, headers, ...(body ? { body } : {}) });
    let text = await answer.text();
    if (!swallowed && /"method":\s*"SendMessage"/.test(body)) {
      swallowed = true;
      forwarded();
      return; // held: the socket stays open until the sender dies
    }
    text = text.split(target).join(url);
    res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" });
    res.end(text);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, firstSendForwarded };
};

/** The second process's log, read once it has exited. */
const remoteLog = async (dataDir: string) => {
  const store = await openPgliteStore({ dataDir });
  const rt = await createRuntime({ store, model: scriptedModel(() => ({ text: "unused" })) });
  try {
    return await rt.events({ limit: 10_000 });
  } finally {
    await rt.close();
    await store.close();
  }
};

describe("when A0 in one process delegates to a profile served by another", () => {
  it("gets the answer back, and a stop of its tree cancels the other's task", async () => {
    const remote = await startRemote();
    process.env["FAR_TOKEN"] = TOKEN;
    const dataDir = await copyPgliteTemplate();
    dirs.push(dataDir);
    const store = await openPgliteStore({ dataDir });
    const model = scriptedModel((req: ModelRequest) => {
      const last = req.messages.at(-1)!;
      if (last.role === "tool") return { text: `A0 got: ${String(last.content).split("\n")[0]}` };
      return {
        toolCalls: [
          { id: "far1", name: "call_subordinate", arguments: { message: String(last.content), profile: "far" } },
        ],
      };
    });
    const rt = await createRuntime({ store, model, profiles: [profilesFor(remote.url)], limits: { remotePollMs: 50 } });
    try {
      const root = await rt.createContext();
      const answered = await rt.send(root.id, "chart the tides");
      expect(answered).toMatchObject({ status: "completed", response: "A0 got: far side did: chart the tides" });
      const child = (await rt.contexts({ rootContextId: root.id })).find((c) => c.kind === "remote")!;
      // The task the child recorded is the other process's run, read from its log over A2A.
      const client = await a2aClient(remote.url, () => ({ authorization: `Bearer ${TOKEN}` }));
      const done = await client.getTask({ tenant: "", id: child.remote!.taskId! });
      expect(done.status!.state).toBe(TaskState.TASK_STATE_COMPLETED);

      const held = await rt.start(root.id, "hold the line");
      await remote.line("model hold the line");
      await rt.stop(root.id);
      expect((await held.ended).status).toBe("stopped");
      const stopped = (await rt.context(child.id))!;
      expect(stopped.status).toBe("stopped");
      expect(stopped.remote!.taskId).not.toBe(child.remote!.taskId);
      const canceled = await client.getTask({ tenant: "", id: stopped.remote!.taskId! });
      expect(canceled.status!.state).toBe(TaskState.TASK_STATE_CANCELED);
    } finally {
      await rt.close();
      await store.close();
      delete process.env["FAR_TOKEN"];
    }
    remote.send("quit");
    await remote.line("bye");
  }, 120_000);

  it("resumes waiting on the same task after a SIGKILL mid-delegation: the other process runs it once", async () => {
    const remote = await startRemote();
    const dataDir = await copyPgliteTemplate();
    dirs.push(dataDir);
    const profiles = profilesFor(remote.url);
    const first = launch("./delegatingAgent.ts", [dataDir, profiles, "hold the bridge"], { FAR_TOKEN: TOKEN });
    const taskId = (await first.line("accepted ")).slice("accepted ".length);
    await remote.line("model hold the bridge");
    first.child.kill("SIGKILL");
    await first.exited;

    const again = launch("./delegatingAgent.ts", [dataDir, profiles, "--reopen"], { FAR_TOKEN: TOKEN });
    // Reopened, its delegation waits on the remote task, still held; released only now, the answer comes through tasks/get.
    await again.line("open");
    remote.send("release");
    const done = await again.line("done ");
    expect(done).toBe(`done RunCompleted ${JSON.stringify("A0 got: far side did: hold the bridge")}`);
    await again.exited;
    remote.send("quit");
    await remote.line("bye");

    const theirs = await remoteLog(remote.dataDir);
    const received = theirs.filter((e) => e.type === "MessageReceived");
    expect(received.map((e) => e.type === "MessageReceived" && e.data.text)).toEqual(["hold the bridge"]);
    const runs = theirs.filter((e) => e.type === "RunStarted");
    expect(runs.map((e) => e.type === "RunStarted" && e.data.runId)).toEqual([taskId]);
    expect(theirs.some((e) => e.type === "RunCompleted")).toBe(true);
  }, 180_000);

  it("sends the message again under the same id after a SIGKILL between sending and recording the task: the other process still runs it once", async () => {
    const remote = await startRemote();
    const proxy = await swallowingProxy(remote.url);
    const dataDir = await copyPgliteTemplate();
    dirs.push(dataDir);
    const profiles = profilesFor(proxy.url);
    const first = launch("./delegatingAgent.ts", [dataDir, profiles, "hold the gate"], { FAR_TOKEN: TOKEN });
    // The agent took the message and answered, but that answer never reached the sender: no task id on its log.
    await proxy.firstSendForwarded;
    await remote.line("model hold the gate");
    first.child.kill("SIGKILL");
    await first.exited;
    // Its log, as the kill left it: the task was recorded as sent, and no task id came back.
    const cut = await openPgliteStore({ dataDir });
    const types = (await cut.readAll(0, 10_000)).map((e) => e.type);
    await cut.close();
    expect(types).toContain("RemoteTaskSent");
    expect(types).not.toContain("RemoteTaskAccepted");

    const again = launch("./delegatingAgent.ts", [dataDir, profiles, "--reopen"], { FAR_TOKEN: TOKEN });
    await again.line("open");
    remote.send("release");
    const done = await again.line("done ");
    expect(done).toBe(`done RunCompleted ${JSON.stringify("A0 got: far side did: hold the gate")}`);
    await again.exited;
    remote.send("quit");
    await remote.line("bye");

    const theirs = await remoteLog(remote.dataDir);
    expect(
      theirs.filter((e) => e.type === "MessageReceived").map((e) => e.type === "MessageReceived" && e.data.text),
    ).toEqual(["hold the gate"]);
    expect(theirs.filter((e) => e.type === "RunStarted")).toHaveLength(1);
  }, 180_000);
});

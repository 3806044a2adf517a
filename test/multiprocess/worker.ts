// A runtime process for cluster.test.ts: sends the messages it is handed on stdin, retrying contexts another process drives.
//
// argv: <postgres url> <owner> <leaseTtlMs>
// stdin, one JSON object a line: {"op":"send","job":"…","contextId":"…","text":"…"} | {"op":"quit"}
// stdout, one line each:
//   ready                                   the runtime is open
//   ack <position> <streamId> <type>        an event this process saw committed (its subscription delivered it)
//   model <contextId> A<n>                  a model call began (the run is open)
//   busy <job> <owner>                      the context is driven by another process; retried after a pause
//   done <job> <status> <runId>             the send's run ended
//   fail <job> <message>                    the send failed otherwise (the test fails)
//   bye                                     closed after quit
import { createInterface } from "node:readline";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import { scriptedModel } from "../../src/models/scripted.ts";
import type { ModelRequest, ModelTurn } from "../../src/models/port.ts";
import { createRuntime, internalsOf, RuntimeError } from "../../src/runtime/runtime.ts";

const [url, owner, ttl] = process.argv.slice(2) as [string, string, string];
const MAX_IN_FLIGHT = 6;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (line: string) => process.stdout.write(`${line}\n`);

/** 20–80 ms, the same for the same request: a deterministic latency. */
const latencyOf = (key: string) => {
  let h = 0;
  for (const c of key) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return 20 + (h % 61);
};

let calls = 0;
const CONTEXT_ID = /context_id: ([0-9a-f-]{36})/g;

/**
 * A0 delegates each message once, then answers with what came back. Messages numbered odd continue the
 * child named in the history (so a child created by one process is continued by another); even ones reset.
 */
const turnFor = (req: ModelRequest): ModelTurn => {
  const last = req.messages.at(-1)!;
  const text = typeof last.content === "string" ? last.content : "";
  if (req.agentNumber > 0)
    return { text: `A${req.agentNumber} did: ${text}`, usage: { inputTokens: 5, outputTokens: 3 } };
  if (last.role === "tool")
    return { text: `A0 reports: ${text.split("\n")[0]!.slice(0, 80)}`, usage: { inputTokens: 7, outputTokens: 4 } };
  const k = Number(/#(\d+)/.exec(text)?.[1] ?? 0);
  const known = [
    ...req.messages
      .map((m) => (typeof m.content === "string" ? m.content : ""))
      .join("\n")
      .matchAll(CONTEXT_ID),
  ].map((m) => m[1]!);
  const args =
    k % 2 === 1 && known.length > 0
      ? { message: `continue: ${text}`, context_id: known.at(-1) }
      : { message: `child task: ${text}`, reset: true };
  return {
    toolCalls: [{ id: `${owner}_${++calls}`, name: "call_subordinate", arguments: JSON.stringify(args) }],
    usage: { inputTokens: 6, outputTokens: 2 },
  };
};

const model = scriptedModel(async (req) => {
  say(`model ${req.contextId} A${req.agentNumber}`);
  await sleep(latencyOf(`${req.contextId}:${req.messages.length}`));
  return turnFor(req);
});

const store = await openPostgresStore({ url, poolSize: 8 });
const rt = await createRuntime({ store, model, owner, limits: { leaseTtlMs: Number(ttl) }, recovery: "interrupt" });
const unsubscribe = store.subscribe(await store.headPosition(), (e) => {
  say(`ack ${e.globalPosition} ${e.streamId} ${e.type}`);
});

type Job = { job: string; contextId: string; text: string };
const waiting: Job[] = [];
const busyContexts = new Set<string>();
let inFlight = 0;
let quitting: (() => void) | null = null;
const drained = () => inFlight === 0 && waiting.length === 0;

const runJob = async (job: Job) => {
  for (let attempt = 1; ; attempt++) {
    try {
      const r = await rt.send(job.contextId, job.text);
      say(`done ${job.job} ${r.status} ${r.runId}`);
      return;
    } catch (e) {
      if (e instanceof RuntimeError && e.reason === "busy") {
        say(`busy ${job.job} ${/\(([^)]*)\)/.exec(e.message)?.[1] ?? "?"}`);
        await sleep(40 + ((attempt * 37) % 80));
        continue;
      }
      say(`fail ${job.job} ${(e as Error).message.replace(/\s+/g, " ")}`);
      return;
    }
  }
};

/** Starts waiting jobs, at most MAX_IN_FLIGHT at once and one per context (this process's own sends never overlap). */
const pump = () => {
  for (let i = 0; i < waiting.length && inFlight < MAX_IN_FLIGHT;) {
    const job = waiting[i]!;
    if (busyContexts.has(job.contextId)) {
      i++;
      continue;
    }
    waiting.splice(i, 1);
    busyContexts.add(job.contextId);
    inFlight++;
    void runJob(job).finally(() => {
      busyContexts.delete(job.contextId);
      inFlight--;
      pump();
      if (quitting && drained()) quitting();
    });
  }
};

/** For a test that timed out: what this process's actors think (reads the runtime's private state). */
const dump = () => {
  const active = internalsOf(rt).active;
  for (const [id, ac] of active) {
    if (!busyContexts.has(id) && ac.view.status !== "running") continue;
    say(
      `dump ${id} actor=${JSON.stringify(ac.actor.getSnapshot().value)} view=${ac.view.status}@v${ac.view.version} run=${ac.run?.runId ?? "-"} log=${ac.actor.getSnapshot().context.status}`,
    );
  }
  say(`dump in-flight [${[...busyContexts].join(", ")}] waiting ${waiting.length}`);
};

say("ready");
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const msg = JSON.parse(line) as
    { op: "send"; job: string; contextId: string; text: string } | { op: "quit" } | { op: "dump" };
  if (msg.op === "quit") break;
  if (msg.op === "dump") {
    dump();
    continue;
  }
  waiting.push(msg);
  pump();
}
if (!drained()) await new Promise<void>((r) => (quitting = r));
unsubscribe();
await rt.close();
await store.close();
say("bye");
process.exit(0);

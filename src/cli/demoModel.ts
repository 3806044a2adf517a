// The offline demo model: a deterministic script over the real tools that builds a real delegation tree.
//
// Requirements:
// - A0 calls `parallel` with two `call_subordinate` jobs: a researcher A1 and a developer A1; once the
//   jobs are back it composes their results into its final answer (the `response` tool).
// - A researcher A1 first delegates a sub-question to its own A2 (`call_subordinate`), then answers.
// - Every other agent answers at once. A tool error it gets back is acknowledged, never retried in a loop.
// - Each call waits a small simulated latency (deterministic per call) and honours the abort signal.
// - Usage is reported (about four characters a token), so token counts roll up like a real model's.
import { createHash } from "node:crypto";
import type { ChatMessage } from "../models/messages.ts";
import { NOT_RUN_RESULT } from "../projections/transcript.ts";
import { ModelError, type ModelPort, type ModelRequest, type ModelTurn } from "../models/port.ts";

export const DEMO_MODEL_NAME = "actorzero-demo";

export type DemoModelOptions = {
  /** Mean simulated latency per call in ms (each call waits between half and one and a half times it). Default 200. */
  latencyMs?: number;
};

/**
 * @example
 * const rt = await createRuntime({ store, model: demoModel(), presets: { Default: { model: DEMO_MODEL_NAME } } });
 */
export const demoModel = (options: DemoModelOptions = {}): ModelPort => {
  const mean = options.latencyMs ?? 200;
  return {
    async call(request) {
      await sleep(latencyOf(request, mean), request.signal);
      const turn = turnFor(request);
      return { ...turn, usage: usageOf(request.messages, turn) };
    },
  };
};

/** Between 0.5 and 1.5 times the mean, the same for the same call. */
const latencyOf = (request: ModelRequest, mean: number): number => {
  const h = createHash("sha1").update(`${request.contextId}:${request.messages.length}`).digest();
  return Math.round(mean * (0.5 + h[0]! / 255));
};

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const stopped = () => new ModelError("aborted", "The model call was stopped.", false);
    if (signal.aborted) return reject(stopped());
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(stopped());
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });

const usageOf = (messages: ChatMessage[], turn: ModelTurn) => {
  const input = messages.reduce((n, m) => n + (typeof m.content === "string" ? m.content.length : 0), 0);
  const output = (turn.text ?? "").length + JSON.stringify(turn.toolCalls ?? []).length;
  return { inputTokens: Math.ceil(input / 4), outputTokens: Math.ceil(output / 4) };
};

/** What a tool in flight gets as its result when its run is stopped (recorded by the runtime's stop). */
const STOPPED_RESULT = "Stopped while running.";

/** Where the current run starts: after the last answer, or after a run that a stop cut short. */
const runStart = (messages: ChatMessage[]): number => {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "assistant" && (!m.tool_calls?.length || m.tool_calls.some((c) => c.function.name === "response")))
      return i + 1;
    if (m.role === "tool" && (m.content === NOT_RUN_RESULT || m.content.includes(STOPPED_RESULT))) return i + 1;
  }
  return 0;
};

/** What this agent was asked in the current run, what it was told meanwhile, and the tool results it got since. */
const situation = (messages: ChatMessage[]) => {
  // The result of the `response` call that ended the previous run belongs to that run.
  let start = runStart(messages);
  while (messages[start]?.role === "tool") start++;
  const run = messages.slice(start);
  const users = run.filter((m) => m.role === "user").map((m) => m.content);
  const results = run.flatMap((m) =>
    m.role === "tool" && m.content !== NOT_RUN_RESULT && !m.content.includes(STOPPED_RESULT) ? [m.content] : [],
  );
  return { task: users[0] ?? "", notes: users.slice(1), results };
};

const call = (request: ModelRequest, name: string, args: unknown): ModelTurn => ({
  toolCalls: [
    { id: `demo_${request.contextId.slice(0, 8)}_${request.messages.length}`, name, arguments: JSON.stringify(args) },
  ],
});

const answer = (request: ModelRequest, text: string): ModelTurn => call(request, "response", { text });

/** A subordinate's answer without the footer call_subordinate adds (context id, reference hint). */
const bare = (result: string) => result.split(/\n\n\(from A\d+, context_id: /)[0]!.trim();

const topic = (task: string) => task.replace(/\s+/g, " ").trim().slice(0, 120) || "the task";

/** Subordinates are told the topic on a line of its own, so they can name it back. */
const subjectOf = (task: string) => /^Topic: (.*)$/m.exec(task)?.[1]?.trim() || topic(task);

const turnFor = (request: ModelRequest): ModelTurn => {
  const { task, notes, results } = situation(request.messages);
  const subject = subjectOf(task);
  const noted =
    notes.length > 0 ? `\n\nNoted from you meanwhile: ${notes.map((n) => `“${topic(n)}”`).join("; ")}.` : "";

  if (request.agentNumber === 0) {
    if (results.length === 0) {
      return call(request, "parallel", {
        tool_calls: [
          {
            name: "call_subordinate",
            arguments: {
              profile: "researcher",
              name: "researcher",
              reset: true,
              message: `Topic: ${subject}\nResearch the background: list the key facts and one risk.`,
            },
          },
          {
            name: "call_subordinate",
            arguments: {
              profile: "developer",
              name: "developer",
              reset: true,
              message: `Topic: ${subject}\nSketch how to build it: give the main steps.`,
            },
          },
        ],
      });
    }
    return answer(request, compose(subject, results.at(-1)!) + noted);
  }

  if (request.profile === "researcher" && request.agentNumber === 1 && results.length === 0) {
    return call(request, "call_subordinate", {
      profile: "researcher",
      name: "fact-checker",
      message: `Topic: ${subject}\nCheck one fact: which assumption is most likely wrong?`,
    });
  }

  if (request.profile === "researcher" && request.agentNumber === 1) {
    const checked = bare(results.at(-1)!);
    return answer(
      request,
      `Findings on “${subject}”:\n- the goal and its users are clear enough to start;\n- two similar efforts exist and can be reused;\n- risk: ${checked}` +
        noted,
    );
  }

  if (request.profile === "developer") {
    return answer(
      request,
      `How to build “${subject}”:\n1. define the interface;\n2. build the smallest working version;\n3. test it and ship it behind a flag.` +
        noted,
    );
  }

  if (request.agentNumber >= 2) {
    return answer(request, `the timeline is the weakest assumption; verify it first.` + noted);
  }

  return answer(request, `Done: ${subject}.` + noted);
};

/** A0's final answer from the parallel tool's JSON output (or the error it got instead). */
const compose = (subject: string, result: string): string => {
  type Output = { status?: string; jobs?: { status?: string; result?: string; error?: string; context_id?: string }[] };
  let parsed: Output | null;
  try {
    parsed = JSON.parse(result) as Output;
  } catch {
    parsed = null;
  }
  if (!parsed?.jobs) return `I could not delegate ${subject}: ${topic(result)}`;
  const parts = parsed.jobs.map((job, i) => {
    const who = i === 0 ? "Research" : i === 1 ? "Build" : `Part ${i + 1}`;
    const body =
      job.status === "success" && job.result
        ? bare(job.result)
        : `(${job.status ?? "no result"}${job.error ? `: ${job.error}` : ""})`;
    return `## ${who}\n${body}`;
  });
  return [
    `Answer for “${subject}”`,
    ...parts,
    "(Composed offline by the actorzero demo model from its subordinates' answers.)",
  ].join("\n\n");
};

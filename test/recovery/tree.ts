// The three-level tree the recovery tests resume: A0 runs two A1 branches as `parallel` jobs, each A1 delegates
// to one A2, and each A2 calls an idempotent tool (`lookup`) and one with a side effect (`note`) before answering.
// The model's replies depend only on what it is sent, so an uninterrupted run and a resumed one can be compared.
import { appendFileSync } from "node:fs";
import { z } from "zod";
import { defineTool, type ModelRequest, type ModelTurn, type Tool } from "../../src/index.ts";
import type { Clock } from "../../src/events/clock.ts";

const turn = (id: string, name: string, args: unknown) => [{ id, name, arguments: JSON.stringify(args) }];

/** Which step of its run a context is at: replies already in its transcript, plus one. */
export const stepOf = (req: ModelRequest): number => req.messages.filter((m) => m.role === "assistant").length + 1;

/** The context's name as the model knows it: the task it was given names it. */
const nameOf = (req: ModelRequest): string =>
  /\[(.+?)\]/.exec(String(req.messages.find((m) => m.role === "user")?.content ?? ""))?.[1] ?? "root";

/** The tree's model: a pure function of the request. */
export const treeReply = (req: ModelRequest): ModelTurn => {
  const step = stepOf(req);
  const name = nameOf(req);
  const results = req.messages
    .flatMap((m) => (m.role === "tool" ? [String(m.content).split("\n")[0]] : []))
    .join(" | ");
  if (req.agentNumber === 0) {
    if (step === 1) {
      const jobs = ["b1", "b2"].map((b) => ({
        name: "call_subordinate",
        arguments: { message: `[${b}] work on branch ${b}`, name: b },
      }));
      return { toolCalls: turn("root-1", "parallel", { tool_calls: jobs }) };
    }
    return { text: `tree done: ${results.length} characters of results` };
  }
  if (req.agentNumber === 1) {
    if (step === 1)
      return {
        toolCalls: turn(`${name}-1`, "call_subordinate", {
          message: `[${name}.leaf] dig under ${name}`,
          name: `${name}.leaf`,
        }),
      };
    return { text: `${name}: ${results}` };
  }
  if (step === 1) {
    return {
      toolCalls: [
        { id: `${name}-lookup`, name: "lookup", arguments: JSON.stringify({ key: name }) },
        { id: `${name}-note`, name: "note", arguments: JSON.stringify({ text: `seen ${name}` }) },
      ],
    };
  }
  return { text: `${name} found ${results}` };
};

/** How many model calls one uninterrupted tree makes: two for each of its five contexts. */
export const CALLS_PER_TREE = 10;

export type TreeToolHooks = {
  /** Called as a tool starts; a promise it returns holds the tool there (a process about to be killed). */
  onTool?: (name: string, key: string) => void | Promise<void>;
  /** Where `note` records its side effect, one line per run of it. */
  sideEffects?: string;
};

/** `lookup` (idempotent: reading twice is reading once) and `note` (a side effect; not idempotent). */
export const treeTools = (hooks: TreeToolHooks = {}): Tool<any>[] => [
  defineTool({
    name: "lookup",
    description: "Looks a key up.",
    input: z.object({ key: z.string() }),
    idempotent: true,
    run: async ({ key }) => {
      await hooks.onTool?.("lookup", key);
      return `value of ${key}`;
    },
  }),
  defineTool({
    name: "note",
    description: "Writes a note down.",
    input: z.object({ text: z.string() }),
    run: async ({ text }, ctx) => {
      if (hooks.sideEffects) appendFileSync(hooks.sideEffects, `${ctx.contextId} ${ctx.toolCallId}\n`);
      await hooks.onTool?.("note", text);
      return `noted: ${text}`;
    },
  }),
];

/** A clock whose ids count up (so two runs of the tree name everything alike); `next` continues another's count. */
export const countingClock = (start = 0): Clock & { readonly count: number } => {
  let n = start;
  return {
    now: () => new Date(),
    // The count leads: job ids are cut from a uuid's first 8 hex digits.
    uuid: () => `${(++n).toString(16).padStart(8, "0")}-0000-4000-8000-000000000000`,
    get count() {
      return n;
    },
  };
};

/** A request as bytes: everything the model is sent but the abort signal. */
export const requestBytes = (req: ModelRequest): string =>
  JSON.stringify({
    contextId: req.contextId,
    agentNumber: req.agentNumber,
    profile: req.profile,
    model: req.model,
    messages: req.messages,
    tools: req.tools,
  });

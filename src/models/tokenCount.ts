// Token counts of the request the runtime would send: what a context window and a budget reservation are measured in.
// Requirements: a real tokenizer (gpt-tokenizer's BPE tables), its encoding chosen by the model's name; an estimate
// for models it does not know that errs on the large side (a window is never passed by undercounting); nothing
// loaded until a count is first asked for (the tables are megabytes, and a runtime with no window never needs them);
// repeated message texts are counted once (a conversation resends its whole history on every call), so a model's
// counter is made once and shared by every caller (each budgeted or rate-limited call counts its request).
import type { ChatMessage } from "./messages.ts";
import type { ToolSpec } from "./port.ts";

/** Which BPE table counts a model's tokens. `estimate` is o200k_base plus a margin (see `UNKNOWN_MODEL_MARGIN`). */
export type TokenEncoding = "o200k_base" | "cl100k_base" | "estimate";

/**
 * Unknown models (other vendors' models behind an OpenAI-compatible endpoint) are counted with o200k_base and
 * this margin added: their tokenizers are not published as tables here, and counts of the common open models'
 * tokenizers run up to about a fifth above o200k_base on English and code.
 */
export const UNKNOWN_MODEL_MARGIN = 0.25;

/** Per OpenAI's published accounting for chat requests: each message costs its text plus this many tokens. */
const PER_MESSAGE = 3;
/** Every reply is primed with this many tokens (`<|start|>assistant<|message|>`). */
const REPLY_PRIMING = 3;
/** A tool definition costs its JSON text plus this many tokens of framing. */
const PER_TOOL = 8;

/**
 * The encoding of a model by its name (a provider prefix such as `openai/` is ignored).
 *
 * @example
 * encodingFor("gpt-4o-mini") // "o200k_base"
 * encodingFor("gpt-4-turbo") // "cl100k_base"
 * encodingFor("llama3.1:8b") // "estimate"
 */
export function encodingFor(model: string): TokenEncoding {
  const name = model.toLowerCase().replace(/^.*\//, "");
  if (/^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o1|o3|o4|chatgpt-4o|gpt-oss)/.test(name)) return "o200k_base";
  if (/^(gpt-4|gpt-3\.5|text-embedding-(ada|3))/.test(name)) return "cl100k_base";
  return "estimate";
}

type Encoder = { countTokens(text: string): number };
const encoders = new Map<"o200k_base" | "cl100k_base", Promise<Encoder>>();

const loadEncoder = (table: "o200k_base" | "cl100k_base"): Promise<Encoder> => {
  let loading = encoders.get(table);
  if (loading === undefined) {
    loading =
      table === "o200k_base"
        ? import("gpt-tokenizer/encoding/o200k_base")
        : import("gpt-tokenizer/encoding/cl100k_base");
    encoders.set(table, loading);
  }
  return loading;
};

/** Counts for one model; every method is synchronous once `tokenCounterFor` has loaded the table. */
export type TokenCounter = {
  readonly model: string;
  readonly encoding: TokenEncoding;
  /** Tokens of a bare text. */
  text(text: string): number;
  /** Tokens of one chat message, its framing included. */
  message(message: ChatMessage): number;
  /** Tokens of the tool definitions a request carries. */
  tools(tools: readonly ToolSpec[]): number;
  /** Tokens of the whole prompt: messages, tools and the reply's priming (the reserved output is not included). */
  request(request: { messages: readonly ChatMessage[]; tools: readonly ToolSpec[] }): number;
};

/** How many distinct texts each counter remembers (a long history's messages, the system prompt, tool schemas). */
const REMEMBERED_TEXTS = 4096;

const counters = new Map<string, Promise<TokenCounter>>();

/** The counter for `model`, made on first use (its table loaded then, shared by every model of that table). */
export function tokenCounterFor(model: string): Promise<TokenCounter> {
  let counter = counters.get(model);
  if (counter === undefined) counters.set(model, (counter = makeCounter(model)));
  return counter;
}

async function makeCounter(model: string): Promise<TokenCounter> {
  const encoding = encodingFor(model);
  const encoder = await loadEncoder(encoding === "cl100k_base" ? "cl100k_base" : "o200k_base");
  const margin = encoding === "estimate" ? 1 + UNKNOWN_MODEL_MARGIN : 1;
  const remembered = new Map<string, number>();
  const text = (value: string): number => {
    if (value.length === 0) return 0;
    const known = remembered.get(value);
    if (known !== undefined) return known;
    const counted = Math.ceil(encoder.countTokens(value) * margin);
    if (remembered.size >= REMEMBERED_TEXTS) remembered.delete(remembered.keys().next().value as string);
    remembered.set(value, counted);
    return counted;
  };
  const message = (m: ChatMessage): number => {
    let total = PER_MESSAGE + text(m.role) + text(m.content ?? "");
    if (m.role === "tool") total += text(m.tool_call_id);
    if (m.role === "assistant")
      for (const call of m.tool_calls ?? [])
        total += PER_MESSAGE + text(call.function.name) + text(call.function.arguments);
    return total;
  };
  // A run's tool specs are the same objects call after call: each is written out and counted once.
  const perSpec = new WeakMap<ToolSpec, number>();
  const spec = (s: ToolSpec): number => {
    let n = perSpec.get(s);
    if (n === undefined) perSpec.set(s, (n = PER_TOOL + text(JSON.stringify(s))));
    return n;
  };
  const tools = (specs: readonly ToolSpec[]): number => specs.reduce((sum, s) => sum + spec(s), 0);
  return {
    model,
    encoding,
    text,
    message,
    tools,
    request: (request) => request.messages.reduce((sum, m) => sum + message(m), REPLY_PRIMING) + tools(request.tools),
  };
}

// The model port: one call in the OpenAI chat shape; the OpenAI adapter and the scripted model both implement it.
import type { ChatMessage } from "./messages.ts";
import type { ModelErrorReason } from "../events/schema.ts";

/** A tool as the model sees it: the JSON schema of its input. */
export type ToolSpec = { name: string; description: string; parameters: Record<string, unknown> };

export type ModelRequest = {
  contextId: string;
  agentNumber: number;
  profile: string;
  /** The resolved model name (from the override or the configured preset). */
  model: string;
  /** The endpoint of the resolved preset or override, when it names one. */
  baseURL?: string;
  messages: ChatMessage[];
  tools: ToolSpec[];
  signal: AbortSignal;
  /** Why the call is made when it is not a step of the run: `compaction` for a summary of older history. */
  purpose?: "compaction";
  /**
   * Live pieces of the reply as they stream in (not stored: the turn still arrives whole from `call`).
   * An adapter that cannot stream never calls it.
   */
  onDelta?: (delta: ModelDelta) => void;
};

/** One streamed piece: text as it arrives, or a piece of the `index`-th tool call (its name once, then argument text). */
export type ModelDelta =
  { kind: "text"; text: string } | { kind: "tool_call"; index: number; name?: string; arguments: string };

export type ModelTurn = {
  /** The final answer when there are no tool calls. */
  text?: string | null;
  /** Arguments exactly as the model sent them: usually a JSON string, sometimes not valid JSON. */
  toolCalls?: { id?: string; name: string; arguments: unknown }[];
  usage?: { inputTokens: number; outputTokens: number };
};

export interface ModelPort {
  call(request: ModelRequest): Promise<ModelTurn>;
  /** Who serves the calls, for traces (`gen_ai.system`): "openai" for the OpenAI adapter; "_OTHER" when unset. */
  readonly provider?: string;
}

/** One error type for every way a model call can fail; `retryable` tells the loop whether to back off and try again. */
export class ModelError extends Error {
  readonly _tag = "ModelError" as const;
  constructor(
    readonly reason: ModelErrorReason,
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown; retryAfterMs?: number; status?: number },
  ) {
    super(message, options);
    this.name = "ModelError";
    this.retryAfterMs = options?.retryAfterMs;
    this.status = options?.status;
  }
  readonly retryAfterMs: number | undefined;
  readonly status: number | undefined;
}

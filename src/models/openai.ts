// The OpenAI adapter of the model port: chat completions with tools, over any OpenAI-compatible endpoint.
// This is the only file that imports the `openai` SDK.
// Requirements: a 400 that says the request is longer than the window is `context_overflow` (compaction retries it);
// streamed (`stream: true`, usage in the final chunk) when asked or when the request wants live deltas,
// else one JSON completion; a stop aborts the HTTP exchange and returns nothing partial; every failure is one ModelError.
import { redactSecrets } from "../events/redact.ts";
import type OpenAI from "openai";
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";
import { assembleStream } from "./openaiStream.ts";
import { z } from "zod";
import { ModelError, type ModelPort, type ModelRequest, type ModelTurn } from "./port.ts";

export type OpenAIModelOptions = {
  /** Defaults to `OPENAI_API_KEY`, as in the SDK. */
  apiKey?: string;
  /** The endpoint when the request names none. Defaults to `OPENAI_BASE_URL`, else api.openai.com. */
  baseURL?: string;
  /** Used only when the request carries no model (the runtime always resolves one through the presets). */
  model?: string;
  /** One HTTP request's deadline; past it the call fails with `timeout` (retryable). */
  timeoutMs?: number;
  fetch?: typeof globalThis.fetch;
  /** The key for an endpoint other than the default one (a preset's `apiKeyEnv`); falls back to `apiKey`. */
  apiKeyFor?: (baseURL: string) => string | undefined;
  /**
   * Stream the reply (server-sent chunks, usage from the final one). Default: stream exactly when the request
   * carries `onDelta` (someone listens live), so a caller that only wants the whole turn keeps one plain JSON exchange.
   * `false` never streams (for endpoints without streaming; `onDelta` is then never called).
   */
  stream?: boolean;
};

/** The part of a chat completion the adapter reads; anything else the endpoint returns is ignored. */
const Completion = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          refusal: z.string().nullish(),
          tool_calls: z
            .array(
              z.discriminatedUnion("type", [
                z.object({
                  id: z.string(),
                  type: z.literal("function"),
                  function: z.object({ name: z.string(), arguments: z.string() }),
                }),
                z.object({
                  id: z.string(),
                  type: z.literal("custom"),
                  custom: z.object({ name: z.string(), input: z.string() }),
                }),
              ]),
            )
            .nullish(),
        }),
      }),
    )
    .min(1),
  usage: z.object({ prompt_tokens: z.number(), completion_tokens: z.number() }).nullish(),
});

/**
 * A model port over the chat completions API. Retries are off in the SDK: the message loop retries
 * and records each attempt. The request's `baseURL` picks the endpoint (one client per endpoint).
 *
 * @example
 * const model = openAIModel({ apiKey: process.env.OPENAI_API_KEY, timeoutMs: 120_000 });
 */
/** The SDK, loaded by the first call: a process that never calls the model never pays for it (~240 modules). */
let sdk: typeof import("openai") | undefined;

export function openAIModel(options: OpenAIModelOptions = {}): ModelPort {
  const clients = new Map<string, OpenAI>();
  const secrets = new Set<string>();

  const clientFor = (baseURL: string | undefined): OpenAI => {
    const key = baseURL ?? "";
    const cached = clients.get(key);
    if (cached) return cached;
    const apiKey =
      (baseURL !== undefined ? options.apiKeyFor?.(baseURL) : undefined) ??
      options.apiKey ??
      process.env["OPENAI_API_KEY"];
    if (!apiKey) {
      throw new ModelError("authentication", `No API key for ${baseURL ?? "the default endpoint"}.`, false);
    }
    secrets.add(apiKey);
    const client = new sdk!.OpenAI({
      apiKey,
      baseURL: baseURL ?? options.baseURL,
      maxRetries: 0,
      ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
      logLevel: "off",
    });
    clients.set(key, client);
    return client;
  };

  const redact = (text: string): string => {
    let out = text;
    for (const secret of secrets) out = out.split(secret).join("[redacted]");
    return redactSecrets(out); // URL credentials and key shapes too, before the text is stored in an event
  };

  return {
    provider: "openai",
    async call(request: ModelRequest): Promise<ModelTurn> {
      const model = request.model || options.model;
      if (!model) throw new ModelError("bad_request", "No model named for the call.", false);
      if (request.signal.aborted)
        throw new ModelError("aborted", "The model call was stopped before it started.", false);
      const stream = options.stream ?? request.onDelta !== undefined;
      try {
        sdk ??= await import("openai");
        const client = clientFor(request.baseURL);
        if (stream) {
          const chunks = await client.chat.completions.create(
            { ...toParams(request, model), stream: true, stream_options: { include_usage: true } },
            { signal: request.signal },
          );
          const turn = await assembleStream(chunks, request.onDelta);
          // A stop that lands between the last chunk and here still means no reply.
          if (request.signal.aborted) throw new ModelError("aborted", "The model call was stopped.", false);
          return turn;
        }
        const body: unknown = await client.chat.completions.create(toParams(request, model), {
          signal: request.signal,
        });
        return toTurn(body);
      } catch (error) {
        throw toModelError(error, request.signal, redact);
      }
    },
  };
}

const toParams = (request: ModelRequest, model: string): ChatCompletionCreateParamsNonStreaming => ({
  model,
  // ChatMessage is the chat-completions message shape by construction (src/models/messages.ts).
  messages: request.messages as ChatCompletionMessageParam[],
  // An empty `tools` array is refused by some endpoints; a call without tools simply omits it.
  ...(request.tools.length > 0
    ? {
        tools: request.tools.map((tool) => ({
          type: "function" as const,
          function: { name: tool.name, description: tool.description, parameters: tool.parameters },
        })),
      }
    : {}),
});

const toTurn = (body: unknown): ModelTurn => {
  const parsed = Completion.safeParse(body);
  if (!parsed.success) {
    throw new ModelError(
      "invalid_output",
      `The endpoint returned no usable completion: ${z.prettifyError(parsed.error)}`,
      false,
    );
  }
  const { message } = parsed.data.choices[0]!;
  const toolCalls = (message.tool_calls ?? []).map((call) =>
    call.type === "function"
      ? { id: call.id, name: call.function.name, arguments: call.function.arguments }
      : { id: call.id, name: call.custom.name, arguments: call.custom.input },
  );
  const usage = parsed.data.usage;
  return {
    text: message.content ?? message.refusal ?? null,
    ...(toolCalls.length > 0 ? { toolCalls } : {}),
    ...(usage ? { usage: { inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens } } : {}),
  };
};

/** Every SDK failure as one ModelError; messages pass through `redact` so a key echoed by the endpoint never leaks. */
const toModelError = (error: unknown, signal: AbortSignal, redact: (text: string) => string): ModelError => {
  // First: a stopped stream ends quietly in the SDK and then looks like a cut one.
  if (signal.aborted) return new ModelError("aborted", "The model call was stopped.", false);
  if (error instanceof ModelError) return error;
  if (sdk === undefined)
    return new ModelError("connection", `The OpenAI SDK did not load: ${redact(String(error))}`, false);
  const detail = redact(error instanceof Error ? error.message : String(error));
  if (error instanceof sdk.APIUserAbortError || signal.aborted) {
    return new ModelError("aborted", "The model call was stopped.", false);
  }
  if (error instanceof sdk.APIConnectionTimeoutError)
    return new ModelError("timeout", `The model call timed out: ${detail}`, true);
  if (error instanceof sdk.APIConnectionError) {
    const cause = error.cause instanceof Error ? `: ${redact(error.cause.message)}` : "";
    return new ModelError("connection", `Could not reach the model endpoint${cause}`, true);
  }
  if (error instanceof sdk.APIError && typeof error.status === "number") {
    const status = error.status;
    const options = { status };
    if (status === 429) {
      const retryAfterMs = retryAfter(error.headers);
      return new ModelError("rate_limited", `Rate limited (${detail})`, true, {
        ...options,
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      });
    }
    if (status === 408) return new ModelError("timeout", `The endpoint timed out (${detail})`, true, options);
    if (status >= 500) return new ModelError("server_error", `The endpoint failed (${detail})`, true, options);
    if ((status === 400 || status === 413) && tooLong(error, detail))
      return new ModelError(
        "context_overflow",
        `The request does not fit the model's context window (${detail})`,
        false,
        options,
      );
    if (status === 401 || status === 403)
      return new ModelError("authentication", `The endpoint refused the credentials (${detail})`, false, options);
    if (status >= 400)
      return new ModelError("bad_request", `The endpoint refused the request (${detail})`, false, options);
    return new ModelError("unknown", `Unexpected response (${detail})`, false, options);
  }
  // A JSON body that does not parse surfaces from the SDK as a SyntaxError.
  if (error instanceof SyntaxError)
    return new ModelError("invalid_output", `The endpoint returned malformed JSON: ${detail}`, false);
  // A body cut mid-stream surfaces from fetch as a TypeError ("terminated") or a socket error: the connection dropped.
  if (
    error instanceof TypeError ||
    (error instanceof Error &&
      "code" in error &&
      typeof error.code === "string" &&
      /^(ECONN|EPIPE|UND_ERR)/.test(error.code))
  ) {
    return new ModelError("connection", `The connection to the model endpoint dropped: ${detail}`, true);
  }
  return new ModelError("unknown", `The model call failed: ${detail}`, false);
};

/** How OpenAI-compatible servers say a request is longer than the model's window. */
const TOO_LONG =
  /context_length_exceeded|maximum context length|context window|context length|too many tokens|prompt is too long|input is too long/i;

/** Whether a refused request was refused for its length: OpenAI's error code, or the usual wordings of other servers. */
export const tooLong = (error: { code?: unknown }, detail: string): boolean =>
  error.code === "context_length_exceeded" || TOO_LONG.test(detail);

/**
 * `retry-after-ms` (OpenAI's own), else `retry-after` in seconds or as an HTTP date, else the reset of the limit
 * that ran out (`x-ratelimit-reset-requests` / `-tokens`, e.g. `1s`, `6m0s`, `20ms`; the later of the two when
 * neither says it is the one at 0).
 */
export const retryAfter = (headers: Headers | undefined): number | undefined => {
  const ms = Number.parseFloat(headers?.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return Math.round(ms);
  const raw = headers?.get("retry-after");
  if (raw) {
    const seconds = Number.parseFloat(raw);
    if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
    const date = Date.parse(raw);
    if (!Number.isNaN(date)) return Math.max(0, date - Date.now());
  }
  const resets = (["requests", "tokens"] as const).flatMap((kind) => {
    const reset = durationMs(headers?.get(`x-ratelimit-reset-${kind}`) ?? "");
    return reset === undefined ? [] : [{ reset, out: headers?.get(`x-ratelimit-remaining-${kind}`)?.trim() === "0" }];
  });
  const out = resets.filter((r) => r.out);
  const chosen = out.length > 0 ? out : resets;
  return chosen.length === 0 ? undefined : Math.max(...chosen.map((r) => r.reset));
};

/** A duration as rate-limit headers write it (`1s`, `6m0s`, `1h2m3.5s`, `20ms`), or a bare number of seconds. */
const durationMs = (text: string): number | undefined => {
  const t = text.trim();
  if (t === "") return undefined;
  if (/^\d+(\.\d+)?$/.test(t)) return Math.round(Number.parseFloat(t) * 1000);
  if (!/^(\d+(\.\d+)?(ms|h|m|s))+$/.test(t)) return undefined;
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
  let total = 0;
  for (const [, n, , u] of t.matchAll(/(\d+(\.\d+)?)(ms|h|m|s)/g))
    total += Number.parseFloat(n!) * unit[u as keyof typeof unit];
  return Math.round(total);
};

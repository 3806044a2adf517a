// Assembles a streamed chat completion (server-sent chunks) into one ModelTurn.
// Requirements: text deltas concatenated in order; tool-call deltas merged by `index` (id and name arrive once,
// arguments arrive in pieces); usage read from the final chunk (`stream_options.include_usage`);
// each delta forwarded to the request's `onDelta` as it arrives, a throwing listener never breaking the call;
// a stream that ends without a finish reason is a dropped connection (retryable), never a partial reply.
import { z } from "zod";
import { ModelError, type ModelDelta, type ModelTurn } from "./port.ts";

/** The part of one chunk the assembler reads; anything else the endpoint sends is ignored. */
const Chunk = z.object({
  choices: z
    .array(
      z.object({
        delta: z
          .object({
            content: z.string().nullish(),
            refusal: z.string().nullish(),
            tool_calls: z
              .array(
                z.object({
                  index: z.number(),
                  id: z.string().nullish(),
                  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
                }),
              )
              .nullish(),
          })
          .nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .nullish(),
  usage: z.object({ prompt_tokens: z.number(), completion_tokens: z.number() }).nullish(),
});

type PartialCall = { id?: string; name: string; arguments: string };

export async function assembleStream(
  chunks: AsyncIterable<unknown>,
  onDelta?: (delta: ModelDelta) => void,
): Promise<ModelTurn> {
  let text: string | null = null;
  let refusal: string | null = null;
  let finished = false;
  let usage: ModelTurn["usage"];
  const calls = new Map<number, PartialCall>();
  const emit = (delta: ModelDelta) => {
    try {
      onDelta?.(delta);
    } catch {
      // A listener's failure is the listener's: the model call goes on.
    }
  };

  for await (const raw of chunks) {
    const parsed = Chunk.safeParse(raw);
    if (!parsed.success) {
      throw new ModelError(
        "invalid_output",
        `The endpoint streamed an unusable chunk: ${z.prettifyError(parsed.error)}`,
        false,
      );
    }
    const chunk = parsed.data;
    if (chunk.usage) usage = { inputTokens: chunk.usage.prompt_tokens, outputTokens: chunk.usage.completion_tokens };
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    const delta = choice.delta;
    if (delta?.content) {
      text = (text ?? "") + delta.content;
      emit({ kind: "text", text: delta.content });
    }
    if (delta?.refusal) refusal = (refusal ?? "") + delta.refusal;
    for (const part of delta?.tool_calls ?? []) {
      const call = calls.get(part.index) ?? { name: "", arguments: "" };
      if (part.id) call.id = part.id;
      if (part.function?.name) call.name += part.function.name;
      if (part.function?.arguments) call.arguments += part.function.arguments;
      calls.set(part.index, call);
      emit({
        kind: "tool_call",
        index: part.index,
        ...(part.function?.name ? { name: part.function.name } : {}),
        arguments: part.function?.arguments ?? "",
      });
    }
    if (choice.finish_reason) finished = true;
  }

  if (!finished) {
    // The SDK ends the iteration quietly when the body closes early; only the missing finish reason tells.
    throw new ModelError("connection", "The model stream ended before the reply was complete.", true);
  }
  const toolCalls = [...calls.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, call]) => ({
      ...(call.id !== undefined ? { id: call.id } : {}),
      name: call.name,
      arguments: call.arguments,
    }));
  return {
    text: text ?? refusal,
    ...(toolCalls.length > 0 ? { toolCalls } : {}),
    ...(usage ? { usage } : {}),
  };
}

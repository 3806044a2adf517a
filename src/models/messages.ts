// The chat shape the model port speaks (OpenAI chat completions), shared by the transcript and the adapters.
import { z } from "zod";

export const ChatToolCall = z.object({
  id: z.string(),
  type: z.literal("function"),
  function: z.object({ name: z.string(), arguments: z.string() }),
});
export type ChatToolCall = z.infer<typeof ChatToolCall>;

export const ChatMessage = z.discriminatedUnion("role", [
  z.object({ role: z.literal("system"), content: z.string() }),
  z.object({ role: z.literal("user"), content: z.string() }),
  z.object({
    role: z.literal("assistant"),
    content: z.string().nullable(),
    tool_calls: z.array(ChatToolCall).optional(),
  }),
  z.object({ role: z.literal("tool"), tool_call_id: z.string(), content: z.string() }),
]);
export type ChatMessage = z.infer<typeof ChatMessage>;

/** Tool-call arguments as the model sent them, rendered back as the string the chat API expects. */
export const argumentsAsString = (args: unknown): string =>
  typeof args === "string" ? args : JSON.stringify(args ?? {});

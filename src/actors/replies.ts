// A model's reply as the loop records and compares it: its tool calls normalised, and the key that tells a repeat.
import { argumentsAsString } from "../models/messages.ts";
import type { ModelTurn } from "../models/port.ts";

export type NormalizedCall = { id: string; name: string; arguments: unknown };

/** Tool calls as the loop can record them, whatever shape the model port handed over. */
export const normalizeCalls = (turn: ModelTurn, step: number): NormalizedCall[] =>
  (Array.isArray(turn.toolCalls) ? turn.toolCalls : []).map((c: Partial<NormalizedCall> | null | undefined, i) => {
    const id: unknown = c?.id;
    return {
      id:
        typeof id === "string" && id.length > 0
          ? id
          : id !== undefined && id !== null && id !== ""
            ? JSON.stringify(id)
            : `call_${step}_${i + 1}`,
      name: typeof c?.name === "string" ? c.name : String(c?.name),
      arguments: c?.arguments ?? {},
    };
  });

export const replyKeyOf = (text: string | null, calls: readonly NormalizedCall[]) =>
  JSON.stringify({ text, calls: calls.map((c) => [c.name, argumentsAsString(c.arguments)]) });

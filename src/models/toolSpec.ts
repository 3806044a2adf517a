// A tool's zod input schema as the JSON schema a model sees in function calling.
import { z } from "zod";
import type { ToolSpec } from "./port.ts";

/**
 * The JSON schema (draft-07, no `$schema`) of what the model must send: the schema's input side,
 * so fields with defaults are optional. A part with no JSON equivalent (a `z.custom`, a transform's
 * input) becomes `{}`: the tool still validates it when called. The top level must be an object,
 * as function calling requires.
 *
 * @example
 * jsonSchemaOf(z.object({ message: z.string() }))
 * // { type: "object", properties: { message: { type: "string" } }, required: ["message"] }
 */
export function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dropped, ...json } = z.toJSONSchema(schema, {
    target: "draft-07",
    io: "input",
    unrepresentable: "any",
  }) as Record<string, unknown>;
  if (json["type"] !== "object") {
    throw new TypeError(
      `A tool's input must be a zod object schema; got JSON schema type ${JSON.stringify(json["type"] ?? null)}.`,
    );
  }
  return json;
}

/** The spec the model port sends for a tool defined with a zod input schema. */
export const toolSpec = (tool: { name: string; description: string; input: z.ZodType }): ToolSpec => ({
  name: tool.name,
  description: tool.description,
  parameters: jsonSchemaOf(tool.input),
});

// A tool's zod input schema as the JSON schema the model sees.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { jsonSchemaOf, toolSpec } from "../../src/models/toolSpec.ts";

describe("given a tool's zod input schema", () => {
  const input = z.object({
    message: z.string().describe("The assignment."),
    reset: z.union([z.boolean(), z.string()]).optional(),
    tries: z.number().int().default(1),
  });

  it("gives a draft-07 object schema without $schema, describing each field", () => {
    const json = jsonSchemaOf(input);

    expect(json).not.toHaveProperty("$schema");
    expect(json).toMatchObject({
      type: "object",
      properties: {
        message: { type: "string", description: "The assignment." },
        reset: { type: ["boolean", "string"] },
        tries: { type: "integer", default: 1 },
      },
    });
  });

  it("requires only what the model must send: optional fields and fields with defaults are not required", () => {
    expect(jsonSchemaOf(input)["required"]).toEqual(["message"]);
  });

  it("makes the spec the model port sends", () => {
    expect(toolSpec({ name: "call_subordinate", description: "Delegate.", input })).toEqual({
      name: "call_subordinate",
      description: "Delegate.",
      parameters: jsonSchemaOf(input),
    });
  });

  it("renders a part with no JSON equivalent as an open schema instead of failing", () => {
    const json = jsonSchemaOf(z.object({ anything: z.custom<string>((v) => typeof v === "string") }));
    expect(json["properties"]).toEqual({ anything: {} });
  });

  it("refuses an input that is not an object, as function calling requires", () => {
    expect(() => jsonSchemaOf(z.string())).toThrow(/must be a zod object schema/);
  });
});

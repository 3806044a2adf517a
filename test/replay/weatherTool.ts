// The user tool the frozen fixtures were recorded with, and the prompts folder they were recorded under.
import { z } from "zod";
import { defineTool } from "../../src/index.ts";

export const REPLAY_PROMPTS = new URL("../fixtures/replay-v1/prompts", import.meta.url).pathname;

export const weatherTool = (input: z.ZodObject = z.object({ city: z.string().describe("The city") })) =>
  defineTool({ name: "weather", description: "Today's weather in a city.", input, run: () => "Sunny, 24 °C." });

// The flags that choose the model (and how a killed process's runs go on) for the commands that run agents:
// run, send, serve and mcp.
import { z } from "zod";
import { booleanFlag, textFlag } from "./defineCommand.ts";
import { intFlag } from "./flags.ts";

export const MODEL_FLAGS = {
  offline: booleanFlag("use the bundled offline demo model even when OPENAI_API_KEY is set"),
  model: textFlag("<name>", "the model of the Default preset (with OPENAI_API_KEY)", "--model needs a model name"),
  "base-url": {
    type: "string",
    value: "<url>",
    description: "an OpenAI-compatible endpoint (with OPENAI_API_KEY)",
    schema: z.url({ message: "--base-url needs a URL such as http://localhost:11434/v1" }).optional(),
  },
  latency: {
    type: "string",
    value: "<ms>",
    description: "offline demo: mean simulated latency per model call (default 200)",
    schema: intFlag("--latency").optional(),
  },
  events: booleanFlag("print every event as it is appended, one line each (the default without a terminal)"),
  recovery: {
    type: "string",
    value: "<mode>",
    description: "runs a killed process left unfinished: resume them (default) or interrupt them",
    schema: z.enum(["resume", "interrupt"], { message: "--recovery must be resume or interrupt" }).optional(),
  },
} as const;

const { events: _events, ...withoutEvents } = MODEL_FLAGS;
/** The model flags of a command that prints no events of its own (serve, mcp). */
export const SERVER_MODEL_FLAGS = withoutEvents;

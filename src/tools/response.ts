// The `response` tool: the agent's final answer, which ends its run.
import { z } from "zod";
import { defineTool } from "./defineTool.ts";

export const responseTool = defineTool({
  name: "response",
  description: "Give your final answer and end your turn.",
  input: z.object({ text: z.string() }),
  run: ({ text }) => ({ kind: "response", text }),
});

// The tool the approval tests park on: "deploy", which needs approval before it runs.
import { z } from "zod";
import { defineTool } from "../../src/tools/defineTool.ts";

/**
 * `deploy({ env })`, needing approval. `onRun` sees each call that runs (a test counts them, a child
 * process reports them) and may answer in its place; otherwise the answer is "deployed to <env>".
 */
export const deployTool = (onRun: (env: string) => string | void = () => undefined) =>
  defineTool({
    name: "deploy",
    description: "deploys",
    input: z.object({ env: z.string() }),
    needsApproval: true,
    run: ({ env }) => onRun(env) ?? `deployed to ${env}`,
  });

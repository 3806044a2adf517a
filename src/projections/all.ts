// The projections the runtime keeps, in the order the engine applies them.
import { approvalsProjection } from "./approvals.ts";
import { contextsProjection } from "./contexts.ts";
import { jobsProjection } from "./jobs.ts";
import type { Projection } from "./projection.ts";
import { transcriptProjection } from "./transcript.ts";
import { treeProjection } from "./tree.ts";
import { usageProjection } from "./usage.ts";

export const ALL_PROJECTIONS = [
  contextsProjection,
  treeProjection,
  transcriptProjection,
  usageProjection,
  jobsProjection,
  approvalsProjection,
] as const satisfies readonly Projection<any>[];

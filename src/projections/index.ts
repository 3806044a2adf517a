// The projections of the log and the engine that persists them (DESIGN §2: contexts, tree, transcript, usage, jobs).
import { contextsProjection } from "./contexts.ts";
import { jobsProjection } from "./jobs.ts";
import type { Projection } from "./projection.ts";
import { transcriptProjection } from "./transcript.ts";
import { treeProjection } from "./tree.ts";
import { usageProjection } from "./usage.ts";

export { contextsProjection, INTERRUPTED_MESSAGE, type ContextStatus, type ContextView, type LastRun, type RunStatus } from "./contexts.ts";
export { treeProjection, rootsOf, type TreeChild, type TreeNode } from "./tree.ts";
export { transcriptProjection, transcriptOf, transcriptKey, historyOf, NOT_RUN_RESULT, type RunTranscript } from "./transcript.ts";
export { usageProjection, rollupOf, type UsageRollup, type UsageView } from "./usage.ts";
export { jobsProjection, type JobView } from "./jobs.ts";
export { defineProjection, foldEvents, onceByPosition, type Projection, type ProjectionColumns, type Positioned } from "./projection.ts";

/** Every projection the runtime keeps, in the order the engine applies them. */
export const ALL_PROJECTIONS = [contextsProjection, treeProjection, transcriptProjection, usageProjection, jobsProjection] as const satisfies readonly Projection<any>[];

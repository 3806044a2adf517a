// The projections of the log and the engine that persists them (DESIGN §2: contexts, tree, transcript, usage, jobs, approvals).
export { ALL_PROJECTIONS } from "./all.ts";
export {
  contextsProjection,
  INTERRUPTED_MESSAGE,
  type ContextStatus,
  type ContextView,
  type LastRun,
  type RunStatus,
} from "./contexts.ts";
export { treeProjection, rootsOf, type TreeChild, type TreeNode } from "./tree.ts";
export {
  transcriptProjection,
  transcriptOf,
  transcriptKey,
  historyOf,
  NOT_RUN_RESULT,
  type RunTranscript,
} from "./transcript.ts";
export { usageProjection, rollupOf, type UsageRollup, type UsageView } from "./usage.ts";
export { jobsProjection, type JobView } from "./jobs.ts";
export {
  approvalsProjection,
  decisionRefusal,
  findApproval,
  pendingApprovals,
  type ApprovalStatus,
  type ApprovalView,
  type ContextApprovals,
  type DecisionRefusal,
} from "./approvals.ts";
export {
  defineProjection,
  foldEvents,
  onceByPosition,
  type Projection,
  type ProjectionColumns,
  type Positioned,
} from "./projection.ts";
export {
  openProjections,
  foldSnapshot,
  type Checkpoint,
  type Projections,
  type ProjectionsOptions,
  type ProjectionsSnapshot,
  type SnapshotRow,
  type VerifyResult,
} from "./engine.ts";

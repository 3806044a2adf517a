// actorzero's public API: explicit named exports only.
export { createRuntime, RuntimeError, DEFAULT_LIMITS } from "./runtime/runtime.ts";
export { isLiveDelta, type LiveDelta, type LiveEvent } from "./runtime/liveDeltas.ts";
export type {
  Runtime,
  RuntimeOptions,
  CreateContextOptions,
  SendResult,
  StartResult,
  StartOptions,
  ProfileInfo,
  Limits,
  EventsPage,
  EventsQuery,
  RunQuery,
  VerifyOptions,
} from "./runtime/api.ts";
export type { BudgetReport } from "./runtime/budgets.ts";
export type { RunOutcome } from "./runtime/contextSession.ts";
export { systemClock, type Clock } from "./runtime/clock.ts";

export { openPgliteStore, type PgliteStoreOptions } from "./events/pgliteStore.ts";
export { openPostgresStore, type PostgresStoreOptions } from "./events/postgresStore.ts";
export type { EventStore, ExpectedVersion, AppendResult, Unsubscribe } from "./events/store.ts";
export type { RunLocation } from "./events/runLookup.ts";
export type { LogAnchor, LogProblem, LogVerification } from "./events/verifyLog.ts";
export { ConcurrencyError, EventDecodeError, EventValidationError, StoreError } from "./events/errors.ts";
export { BudgetLimits, DomainEvent, EVENT_TYPES, ModelOverride } from "./events/schema.ts";
export type { BudgetAmount, RecordedEvent, NewEvent, EventType, EventOf } from "./events/schema.ts";
export { ContextId, RunId, JobId, EventId } from "./events/ids.ts";

export { openProjections, type Projections } from "./projections/engine.ts";
export type { WholeLogVerification } from "./projections/wholeLogVerification.ts";
export type { AuditReport } from "./projections/auditReport.ts";
export type {
  ContextView,
  ContextStatus,
  LastRun,
  UsageView,
  UsageRollup,
  JobView,
  TreeChild,
} from "./projections/index.ts";

export { openAIModel, type OpenAIModelOptions } from "./models/openai.ts";
export {
  scriptedModel,
  scriptedTurns,
  type ScriptedModel,
  type ScriptedQueue,
  type ScriptedTurn,
} from "./models/scripted.ts";
export {
  ModelError,
  type ModelDelta,
  type ModelPort,
  type ModelRequest,
  type ModelTurn,
  type ToolSpec,
} from "./models/port.ts";
export type { ChatMessage } from "./models/messages.ts";
export { Preset, Presets, ProjectConfig, Projects, DEFAULT_PRESET } from "./models/presets.ts";

export {
  defineTool,
  RepairableToolError,
  FatalToolError,
  INTERRUPTED_CALL,
  type Tool,
  type ToolContext,
  type ToolOutcome,
  type ToolApprovalContext,
} from "./tools/defineTool.ts";
export type { ApprovalOptions } from "./tools/approval.ts";
export { LEN_MIN } from "./tools/callSubordinate.ts";
export type { McpServerConfig, McpServers, McpSelection } from "./tools/mcpConfig.ts";

export {
  serve,
  serveControlSocket,
  readTokensFile,
  DEFAULT_PORT,
  ServeRefused,
  type ServeOptions,
  type ServerHandle,
  type NamedToken,
  type Role,
} from "./server/index.ts";

export { exportFixture, fixtureText, type ExportOptions } from "./fixtures/export.ts";
export {
  parseFixture,
  FixtureFormatError,
  FORMAT_VERSION,
  type Fixture,
  type FixtureCall,
  type FixtureContext,
  type FixtureToolResult,
} from "./fixtures/format.ts";

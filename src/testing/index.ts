// actorzero/testing: the test kit — scripted turns, arbitraries, the lifecycle invariants, and a model-based harness over a real runtime.
export {
  scriptedModel,
  scriptedTurns,
  type ScriptedModel,
  type ScriptedQueue,
  type ScriptedTurn,
} from "../models/scripted.ts";
export { fixtureModel, canonicalRequest, type FixtureModel, type FixtureMiss } from "../fixtures/fixtureModel.ts";
export { fixtureTools } from "../fixtures/fixtureTools.ts";
export {
  replayFixture,
  compareFixtures,
  type ReplayOptions,
  type ReplayResult,
  type Drift,
} from "../fixtures/replay.ts";
export { exportFixture, fixtureText } from "../fixtures/export.ts";
export { parseFixture, type Fixture } from "../fixtures/format.ts";
export {
  reply,
  callTool,
  delegate,
  respond,
  fail,
  scriptByAgent,
  nextCallId,
  type AgentScript,
  type AgentKey,
  type DelegateArgs,
} from "./script.ts";

export {
  checkInvariants,
  assertInvariants,
  checkSuperiorsInTree,
  readTree,
  type InvariantOptions,
  type TreeLog,
} from "./runtimeInvariants.ts";
export { checkLogShape, LogMemory, InvariantViolation, type Violation, type InvariantName } from "./invariants.ts";
export {
  checkOneRunAtATime,
  checkStatus,
  checkNoRunOutlivesItsSuperior,
  lifecycleOf,
  openRunOf,
  type Lifecycle,
} from "./runInvariants.ts";
export { checkNumbersAndDepths, checkParentLinks } from "./treeInvariants.ts";
export { checkTranscript } from "./transcriptInvariant.ts";

import * as lifecycleSteps from "./lifecycleModel.ts";
/** The reference model of the lifecycle, its steps and their preconditions, by name (every function of lifecycleModel.ts), as a plain object. */
export const lifecycleModel = { ...lifecycleSteps } as const;
export { initialModel } from "./lifecycleModel.ts";
export type {
  LifecycleModel,
  ModelContext,
  RunWait,
  ModelStatus,
  DelegateMode,
  DelegationOutcome,
} from "./lifecycleModel.ts";
export {
  LifecycleHarness,
  ModelDesk,
  crashableStore,
  HarnessClock,
  APPROVAL_TIMEOUT_MS,
  sensitiveTool,
  HARNESS_LIMITS,
  type CrashableStore,
  type HarnessOptions,
} from "./harness.ts";
export {
  lifecycleCommands,
  Send,
  Intervene,
  Pause,
  Resume,
  Stop,
  Reply,
  Delegate,
  FailModel,
  AskApproval,
  Decide,
  TimeOut,
  Restart,
  Crash,
} from "./commands.ts";

export {
  jsonValueArb,
  textArb,
  defaultPools,
  modelOverrideArb,
  eventOfTypeArb,
  domainEventArb,
  type IdPools,
} from "./arbitraries.ts";
export { recordedSequenceArb, type SequenceOptions } from "./sequenceArbitraries.ts";
export {
  awkwardStringArb,
  invalidJsonArb,
  delegateArgsArb,
  refusedDelegateArgsArb,
  malformedArgumentsArb,
  toolNameArb,
  malformedToolCallArb,
  malformedTurnArb,
  contextOptionsArb,
  delegationTreeArb,
  treeSize,
  jsonbStorable,
  type RawToolCall,
  type TreeShape,
} from "./toolCallArbitraries.ts";
export { logBuilder, type LogBuilder } from "./recorded.ts";

// actorzero/testing: the test kit — scripted turns, arbitraries, the lifecycle invariants, and a model-based harness over a real runtime.
export { scriptedModel, scriptedTurns, type ScriptedModel, type ScriptedQueue, type ScriptedTurn } from "../models/scripted.ts";
export { reply, callTool, delegate, respond, fail, scriptByAgent, nextCallId, type AgentScript, type AgentKey, type DelegateArgs } from "./script.ts";

export {
  checkInvariants,
  assertInvariants,
  readTree,
  checkLogShape,
  checkOneRunAtATime,
  checkStatus,
  checkNoRunOutlivesItsSuperior,
  checkNumbersAndDepths,
  checkParentLinks,
  checkTranscript,
  lifecycleOf,
  openRunOf,
  LogMemory,
  InvariantViolation,
  type Violation,
  type InvariantName,
  type InvariantOptions,
  type Lifecycle,
  type TreeLog,
} from "./invariants.ts";

export * as lifecycleModel from "./lifecycleModel.ts";
export { initialModel, type LifecycleModel, type ModelContext, type RunWait } from "./lifecycleModel.ts";
export { LifecycleHarness, ModelDesk, crashableStore, HARNESS_LIMITS, type CrashableStore, type HarnessOptions } from "./harness.ts";
export { lifecycleCommands, Send, Intervene, Pause, Resume, Stop, Reply, Delegate, FailModel, Restart, Crash } from "./commands.ts";

export * from "./arbitraries.ts";
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

// The ports the built-in tools own: how they reach the runtime (Delegator) and the run they serve (RunScope).
// The runtime implements both; tools never import the runtime or the actors, so the arrows point one way.
import type { DataOf, DomainEvent, EventMetadata, RecordedEvent, Superior } from "../events/schema.ts";
import type { ContextId, JobId, RunId } from "../events/ids.ts";
import type { Clock } from "../events/clock.ts";
import type { ContextView } from "../projections/contexts.ts";
import type { RunOutcome } from "../projections/runOutcome.ts";
import type { Profile } from "../profiles/profiles.ts";
import type { Job } from "./jobs.ts";
import type { ApprovalPort, Decision } from "./approval.ts";
import type { ToolContext } from "./defineTool.ts";

/** The run's approval policy (the loop's own), and what a `parallel` job that waits for a decision needs. */
export interface RunApprovals extends ApprovalPort {
  /** Records the ApprovalRequested of a job's call, naming the job; resolves with its approval id. */
  requestForJob(request: { jobId: JobId; tool: string; arguments: unknown; step: number }): Promise<string>;
  /** The decision on `approvalId` once one is recorded (in this process or another); rejects when `signal` aborts or the run ends first. */
  decisionOn(approvalId: string, signal: AbortSignal): Promise<Decision>;
}

/** The caller's run as its tools see it: its ids, its children and jobs, and its stream. */
export interface RunScope {
  readonly runId: RunId;
  readonly correlationId: string;
  /** The calling context as its actor holds it now. */
  view(): ContextView;
  /** Children the caller created, in order, with their slots. */
  readonly children: readonly { contextId: string; slot: string }[];
  /** The child a recorded SubordinateCalled of this run names for `toolCallId` (to resume that delegation). */
  subordinateCalledBy(toolCallId: string): string | undefined;
  /** A subordinate's stored answer, by the tool call that asked (for `§§result(...)`). */
  storedResult(toolCallId: string): string | undefined;
  /** Children the run waits on; a stop of the run stops them first. */
  readonly runningChildren: Set<ContextId>;
  /** Delegations past the live-children guard whose child is not running yet (so parallel jobs cannot all pass it). */
  reservedChildren: number;
  /** The run's `parallel` jobs, by job id. */
  readonly jobs: Map<string, Job>;
  /** Which calls wait for a decision, and a job's request and wait. */
  readonly approvals: RunApprovals;
  /** True once the run's end is recorded: nothing more may be written for it. */
  readonly ended: boolean;
  append(events: DomainEvent[], metadata?: Partial<EventMetadata>): Promise<RecordedEvent[]>;
  /** Records an effect that is over; it reaches the log with the run's next append. */
  stage(events: DomainEvent[], metadata?: Partial<EventMetadata>): void;
  /** Runs `fn` with no append of this stream in between. */
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
}

/** What delegation needs from the runtime: configuration, and creating, running and stopping contexts. */
export interface Delegator {
  readonly clock: Clock;
  readonly limits: { readonly maxDepth: number; readonly maxLiveChildrenPerRun: number };
  readonly profiles: ReadonlyMap<string, Profile>;
  enabledProfiles(project: string | null): string[];
  configuredPresetOf(profile: string, project: string | null): string;
  /** The context as its (activated) actor holds it. */
  view(id: string): Promise<ContextView>;
  rename(id: string, name: string): Promise<ContextView>;
  /** The context as its actor holds it, or null when it is neither live here nor on the log. */
  lookup(id: string): Promise<ContextView | null>;
  /**
   * Activates a new subordinate. Its ContextCreated is not on the log yet: it opens the child's first append
   * (the start of its first run), or `recordOpening` writes it alone.
   */
  create(data: DataOf<"ContextCreated">): Promise<ContextView>;
  /** Writes a new subordinate's ContextCreated now if no append has carried it yet (no run of it will start). */
  recordOpening(id: string): Promise<void>;
  /** Starts a run of `id`; resolves once started, with its end boxed; `busy` when another process drives it. */
  startRun(id: string, text: string, superior: Superior): Promise<{ ended: Promise<RunOutcome> } | "busy">;
  stop(id: string): Promise<unknown>;
  /**
   * The run of `id` that the caller's tool call `call` started, with its end (recorded, or awaited while it
   * runs here), or null when no run of `id` was started for that call.
   */
  runFor(id: string, call: { runId: string; toolCallId: string }): Promise<{ ended: Promise<RunOutcome> } | null>;
}

/**
 * What the built-in tools' calls get: the ToolContext and the calling run's scope. Tools of your own get the
 * ToolContext alone (the runtime takes `run` off before calling them): they cannot write to their run's stream.
 */
export type BuiltInToolContext = ToolContext & { run?: RunScope };

/** The calling run's scope, for a built-in tool; absent for a call outside a run. */
export const runScopeOf = (ctx: ToolContext): RunScope | undefined => (ctx as BuiltInToolContext).run;

/** `ctx` as a tool of your own gets it: without the run's scope. */
export const ownToolContext = (ctx: ToolContext): ToolContext => {
  if (!("run" in ctx)) return ctx;
  const { run: _scope, ...own } = ctx as BuiltInToolContext;
  return own;
};

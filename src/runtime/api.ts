// The runtime's public shape (DESIGN §8): what `createRuntime` returns and the options it takes.
// The implementation is internal; embedders see only this interface, so nothing else leaks.
import type { ContextActor } from "../actors/contextQueries.ts";
import type { TracerProvider } from "@opentelemetry/api";
import type { EventStore, Unsubscribe } from "../events/store.ts";
import type { RunLocation } from "../events/runLookup.ts";
import type { LogAnchor } from "../events/verifyLog.ts";
import type { BudgetLimits, ModelOverride, RecordedEvent } from "../events/schema.ts";
import type { BudgetReport } from "./budgets.ts";
import type { ModelPort } from "../models/port.ts";
import type { Presets, Projects } from "../models/presets.ts";
import type { ContextView } from "../projections/contexts.ts";
import type { ApprovalView } from "../projections/approvals.ts";
import type { AuditReport } from "../projections/auditReport.ts";
import type { WholeLogVerification } from "../projections/wholeLogVerification.ts";
import type { ChatMessage } from "../models/messages.ts";
import type { UsageRollup, UsageView } from "../projections/usage.ts";
import type { Tool } from "../tools/defineTool.ts";
import type { ApprovalOptions } from "../tools/approval.ts";
import type { McpHubOptions } from "../tools/mcp.ts";
import type { McpServers } from "../tools/mcpConfig.ts";
import type { Clock } from "./clock.ts";
import type { RunOutcome } from "./contextSession.ts";
import type { LiveEvent } from "./liveDeltas.ts";

export type Limits = {
  /** Deepest agent number a subordinate may have (A0 is depth 0). */
  maxDepth: number;
  /** Most subordinates one run may have running at once. */
  maxLiveChildrenPerRun: number;
  modelRetries: number;
  /** Retries after a provider's 429 (at least `modelRetries`): a busy provider slows a fan-out rather than failing it. */
  rateLimitRetries: number;
  retryBaseMs: number;
  retryMaxMs: number;
  /** How long an idle context keeps its actor before it is passivated. */
  passivateAfterMs: number;
  /** How long a run's lease outlives its owner's last renewal; another process takes the context over after that. */
  leaseTtlMs: number;
  /** What a budgeted model call reserves for its reply when its preset sets no `maxOutputTokens`. */
  defaultMaxOutputTokens: number;
  /**
   * Most model calls of this runtime in flight at once (every context, every preset); calls beyond wait in a FIFO
   * queue, and their contexts show `queued`. None by default. A preset's `maxConcurrent` caps calls to it alone.
   */
  maxConcurrentModelCalls?: number;
  /** How often a remote subordinate's run reads its A2A task (`tasks/get`) while it waits on it. */
  remotePollMs: number;
};

export const DEFAULT_LIMITS: Limits = {
  maxDepth: 5,
  maxLiveChildrenPerRun: 8,
  modelRetries: 3,
  rateLimitRetries: 100,
  retryBaseMs: 500,
  retryMaxMs: 30_000,
  passivateAfterMs: 30_000,
  leaseTtlMs: 10_000,
  defaultMaxOutputTokens: 4096,
  remotePollMs: 500,
};

export type RuntimeOptions = {
  store: EventStore;
  model: ModelPort;
  /** Extra profile directories (each holds `<key>/profile.json`), after the bundled ones. */
  profiles?: string[];
  presets?: Presets;
  projects?: Projects;
  limits?: Partial<Limits>;
  /** Tools of your own, offered to every agent beside the built-in ones. */
  tools?: Tool<any>[];
  /**
   * MCP servers whose tools agents may use, as `<server>__<tool>`: connected on first use, shared by every
   * context, closed by `close()`. Which ones a context gets: its profile's `mcpServers` (a list or "*", the
   * default), narrowed by its project's.
   */
  mcpServers?: McpServers;
  /** Deadlines for MCP servers: one tool call (`timeoutMs`), connecting and listing (`connectTimeoutMs`); 30 s each by default. */
  mcp?: Pick<McpHubOptions, "timeoutMs" | "connectTimeoutMs">;
  /** Where run, model and tool spans go; default: the globally registered provider (a no-op unless you register one). */
  tracerProvider?: TracerProvider;
  clock?: Clock;
  /** A prompts folder to use instead of the bundled one (system/, tools/, profiles/). */
  promptsDir?: string;
  /**
   * Tools whose calls wait for a person's decision in every context (names, or a prefix ending in `*`;
   * profiles and projects add theirs with `needsApproval`), and how long a decision may take before the
   * call is denied as "timed out" (no limit by default). A call that needs approval parks its run until
   * `approve` / `reject` (or the timeout) decides it.
   */
  approvals?: ApprovalOptions;
  /**
   * What happens to runs a gone process left unfinished, found at open (and, on PostgreSQL, once the dead
   * owner's lease expires): `"resume"` (the default) goes on from the last recorded step, reusing recorded
   * model replies, making a model call cut off without a reply again, and re-running a cut-off tool call
   * only when the tool is `idempotent`; `"interrupt"` records them as interrupted.
   */
  recovery?: "resume" | "interrupt";
  /** This process's name in run leases (default: host, pid and a random suffix). */
  owner?: string;
};

export type CreateContextOptions = {
  name?: string;
  profile?: string;
  project?: string;
  modelOverride?: ModelOverride;
  /** What the whole tree under this root may spend (default: the project's `budget`, else the profile's; none). */
  budget?: BudgetLimits;
};

export type SendResult = RunOutcome & { contextId: string };

/** A message taken: the run that takes it (`intervention`: the run already going on) and that run's end. */
export type StartResult = { contextId: string; runId: string; intervention: boolean; ended: Promise<SendResult> };

/** Where a message came from: an agent protocol (recorded as the message's `via`), and the W3C trace it continues. */
/** `budget`: what this message's work may spend, on top of what its tree has spent so far. */
/**
 * `messageId`: the protocol's id of the message (an A2A `messageId`), recorded as the causation of the run's start, so a
 * message sent again under the same id can be found to have started that run (the A2A server answers with its task).
 */
export type StartOptions = { via?: "mcp" | "a2a"; traceparent?: string; budget?: BudgetLimits; messageId?: string };

/** An enabled profile, as other agents are offered it (an MCP tool, an A2A skill). */
export type ProfileInfo = { key: string; title: string; description: string; context: string };

export type EventsQuery = { after?: number; contextId?: string; limit?: number };

/** One page of the log: `next` is the `after` of the following page, or null when this page reached the end. */
export type EventsPage = { events: RecordedEvent[]; next: number | null };

/** Which run to find: by its id (an A2A task id), or by the protocol message that started it. */
export type RunQuery = { runId: string } | { messageId: string; via: "mcp" | "a2a" };

/** What to verify: the log alone (default), or with `projections: true` the read models against a rebuild too. */
export type VerifyOptions = { projections?: boolean; since?: LogAnchor };

/**
 * The runtime: commands, and queries over its log and read models. It exposes neither the store nor the
 * projection engine: an embedder who needs SQL or the projections' upkeep opens the store itself (it passed it in).
 */
export interface Runtime {
  /** Creates a root context (A0). */
  createContext(opts?: CreateContextOptions): Promise<ContextView>;
  /** A new root whose history is context `id`'s up to the event at log position `at` (see fork.ts). */
  fork(id: string, opts: { at: number }): Promise<ContextView>;
  /**
   * Starts a run on an idle, stopped or failed context, or intervenes in a running one; resolves when that run ends.
   * Rejects (RuntimeError "closed") when `close()` comes first while the run is parked awaiting approval.
   */
  send(id: string, text: string, opts?: StartOptions): Promise<SendResult>;
  /**
   * As `send`, but resolves as soon as the message is recorded, with the id of the run that takes it.
   * `opts.via` records that a new run's message came over MCP or A2A; `opts.traceparent` parents its run span.
   */
  start(id: string, text: string, opts?: StartOptions): Promise<StartResult>;
  /** The profiles a root may use (enabled ones), in key order. */
  profiles(): ProfileInfo[];
  /** The tree's budget: its limits, what it spent, what open calls reserve, and which runs are parked on it. */
  budget(rootId: string): Promise<BudgetReport>;
  /** Adds to the tree's limits (the same keys); runs parked on its budget go on. */
  extendBudget(rootId: string, more: BudgetLimits): Promise<void>;
  /** Stops the context's run and its running subordinates; null when nothing was running. */
  stop(id: string): Promise<RunOutcome | null>;
  /** A running context waits at its next checkpoint until `resume`, a new message, or `stop`. */
  pause(id: string): Promise<void>;
  resume(id: string): Promise<void>;
  /** The tool calls waiting for a decision under context `contextId` (its whole tree), or in the whole log; oldest first. */
  approvals(opts?: { contextId?: string }): Promise<ApprovalView[]>;
  /** Lets a pending call run; its parked run goes on (in this process). Refused (RuntimeError) when not pending. */
  approve(id: string, opts: { by: string; note?: string }): Promise<void>;
  /** Denies a pending call: the model gets `reason` as a repairable tool error and the run goes on. */
  reject(id: string, opts: { by: string; reason: string }): Promise<void>;
  context(id: string): Promise<ContextView | null>;
  contexts(filter?: { rootContextId?: string; status?: ContextView["status"] }): Promise<ContextView[]>;
  children(id: string): Promise<ContextView[]>;
  /**
   * What the model sees of context `id` (compacted topics as their summary, elided tool results as notes);
   * `{ full: true }`: every original message, as the log keeps them.
   */
  history(id: string, options?: { full?: boolean }): Promise<ChatMessage[]>;
  usage(id: string): Promise<{ own: UsageView | null; rollup: UsageRollup | null }>;
  /** Every event asked for: after `after`, of one context when `contextId` is given, at most `limit` when given. */
  events(opts?: EventsQuery): Promise<RecordedEvent[]>;
  /** One page of at most `limit` (default 1000) events, and where the next page starts. */
  eventsPage(opts?: EventsQuery): Promise<EventsPage>;
  /**
   * The log's settled position: every event at or below it can be read now, and no append still in flight can
   * land at or below it (on a log shared by processes it may trail the newest event). Read up to it, keep it,
   * and the next read from it misses nothing.
   */
  settledPosition(): Promise<number>;
  /** The audit of context `id`'s tree, as `actorzero audit --json` prints it; `at`: the log cut at that position. */
  audit(id: string, opts?: { at?: number }): Promise<AuditReport>;
  /**
   * Whether the log holds together (hash chain, stream versions, decodable rows, append-only guard; `since`: from
   * an anchor kept outside), and with `projections: true` whether the read models equal a rebuild of the log
   * (`projections` is null otherwise). It reads the whole log.
   */
  verify(opts?: VerifyOptions): Promise<WholeLogVerification>;
  /** Where a run is: the one `runId` names, or the one a protocol message with that id started; null when none. */
  findRun(query: RunQuery): Promise<RunLocation | null>;
  /** Every event appended from now on (or after `after`), in log order. */
  subscribe(listener: (e: RecordedEvent) => void, opts?: { after?: number; deltas?: false }): Promise<Unsubscribe>;
  /**
   * The same, and with `deltas: true` the model's output as it streams: `LiveDelta`s (`type: "ModelDelta"`,
   * no `globalPosition`; `isLiveDelta(e)` tells them apart), never stored. The log keeps one `ModelReplied` per call.
   */
  subscribe(listener: (e: LiveEvent) => void, opts: { after?: number; deltas: true }): Promise<Unsubscribe>;
  /** The context's actor while it is active (for inspection), else undefined. */
  actor(id: string): ContextActor | undefined;
  /**
   * Passivates every actor; runs still in flight (and their jobs) are recorded as interrupted. A run parked
   * awaiting approval stays parked in the log (a later runtime decides it); waiters on its end are rejected as "closed".
   */
  close(): Promise<void>;
}

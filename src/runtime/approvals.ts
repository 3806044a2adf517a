// Human approval of tool calls: the pending list, the decisions (`approve`, `reject`), and the timeout.
//
// Requirements:
// - Input is checked before anything is read or written: an approval id is a UUID, `by` and `reason` are
//   non-empty strings (`by` a name of at most 100 characters), `note` a string if given. A refusal is a RuntimeError naming the field.
// - A decision is single-use and bound to its pending call: an unknown id, one already decided, or one
//   whose run ended (stopped, failed, interrupted, completed) is refused with that reason, nothing written.
//   The check is made again against the machine in the writer's turn (`approval.decide` must be legal).
// - The deciding process takes the context's lease first (another process may hold it: refused as busy),
//   then records the decision; the decision that settles the run's last pending approval makes the
//   machine go on with the run here. While approvals are still pending, the lease goes back.
// - A parked run outlives no superior: once the run that called it has ended (a close or a crash recorded it
//   as interrupted, say), the parked run is recorded as interrupted too, at open and at each sweep.
// - A pending approval with `expiresAt` is denied by "actorzero" with the reason "timed out" once that
//   time has passed, by whichever process has the parked context active (the others are refused).
import { setTimeout as sleep } from "node:timers/promises";
import type { RunActorInput } from "../actors/contextMachine.ts";
import { isParked, openRunId } from "../actors/contextQueries.ts";
import { ApprovalId, asApprovalId, asRunId } from "../events/ids.ts";
import { approvalsProjection, type ApprovalView, decisionRefusal, pendingApprovals } from "../projections/approvals.ts";
import { foldEvents } from "../projections/projection.ts";
import { subtreeIds } from "../projections/auditLoad.ts";
import type { EventStore } from "../events/store.ts";
import type { Projections } from "../projections/engine.ts";
import type { Configuration } from "./configuration.ts";
import { RuntimeError } from "./errors.ts";
import type { Lifecycle } from "./lifecycle.ts";
import type { Registry } from "./registry.ts";
import { checkId, checkOptions, checkOptionalString, invalid } from "./validate.ts";

export type Decision =
  { granted: true; by: string; note: string | null } | { granted: false; by: string; reason: string };

export const TIMED_OUT = "timed out";
export const TIMEOUT_DECIDER = "actorzero";

const checkApprovalId = (v: unknown): string => {
  if (typeof v !== "string" || !ApprovalId.safeParse(v).success) {
    throw invalid("id", "an approval id (a UUID)", typeof v === "string" ? JSON.stringify(v.slice(0, 80)) : typeof v);
  }
  return v;
};

const requiredText = (field: string, v: unknown): string => {
  const s = checkOptionalString(field, v);
  if (s === undefined || s.trim() === "")
    throw invalid(field, "a non-empty string", s === undefined ? "nothing" : "an empty string");
  return s;
};

/** Who decides is a name, as token names are: at most this many characters. */
export const MAX_DECIDER_LENGTH = 100;

/** Checks `approve(id, { by, note? })` / `reject(id, { by, reason })` input. */
export const checkDecision = (id: unknown, options: unknown, granted: boolean): { id: string; decision: Decision } => {
  const approvalId = checkApprovalId(id);
  const raw = checkOptions(options ?? {}, "options");
  const by = requiredText("by", raw.by);
  if (by.length > MAX_DECIDER_LENGTH)
    throw invalid("by", `a name of at most ${MAX_DECIDER_LENGTH} characters`, `${by.length} characters`);
  if (granted)
    return { id: approvalId, decision: { granted: true, by, note: checkOptionalString("note", raw.note) ?? null } };
  return { id: approvalId, decision: { granted: false, by, reason: requiredText("reason", raw.reason) } };
};

const refusalError = (r: NonNullable<ReturnType<typeof decisionRefusal>>) => new RuntimeError(r.reason, r.message);

export type ApprovalParts = {
  readonly projections: Projections;
  readonly registry: Registry;
  readonly store: EventStore;
  readonly config: Configuration;
  readonly lifecycle: Lifecycle;
};

/** The pending list, the decisions and the timeout (see the requirements above). */
export class Approvals {
  constructor(private readonly parts: ApprovalParts) {}

  /** The pending approvals of the tree under `contextId` (the whole log without one), oldest first. */
  async list(contextId?: string): Promise<ApprovalView[]> {
    await this.parts.projections.catchUp();
    const scope =
      contextId === undefined ? undefined : await subtreeIds(this.parts.projections, checkId("contextId", contextId));
    return pendingApprovals(await this.parts.projections.approvals.of(scope));
  }

  /** Records a decision for a pending approval (see the requirements above); resolves once it is on the log. */
  async decide(approvalId: string, decision: Decision): Promise<void> {
    await this.parts.projections.catchUp();
    const holding = await this.parts.projections.approvals.holding(approvalId);
    const view = holding?.approvals.find((a) => a.approvalId === approvalId);
    const refused = decisionRefusal(approvalId, view);
    if (refused || !view) throw refusalError(refused!);
    const ac = await this.parts.registry.activate(view.contextId);
    // Approvals still pending (or a refusal): the lease goes back, so any process may decide the rest.
    await ac.serialize(() =>
      ac.underLease(
        () =>
          ac.writer.exclusive(async (append) => {
            const s = ac.actor.getSnapshot();
            if (!s.can({ type: "approval.decide", approvalId, facts: [] })) {
              const settled = openRunId(s) !== view.runId || s.context.status !== "running";
              throw settled
                ? new RuntimeError("run_ended", `Approval '${approvalId}' is closed: its run ended before a decision.`)
                : new RuntimeError(
                    "already_decided",
                    `Approval '${approvalId}' was already decided; a decision is used once.`,
                  );
            }
            const bound = {
              approvalId: asApprovalId(view.approvalId),
              runId: asRunId(view.runId),
              toolCallId: view.toolCallId,
              by: decision.by,
            };
            await append([
              decision.granted
                ? { type: "ApprovalGranted", data: { ...bound, note: decision.note } }
                : { type: "ApprovalDenied", data: { ...bound, reason: decision.reason } },
            ]);
          }),
        { busy: "refuse" },
      ),
    );
  }

  /** Parked runs whose superior's run has ended (its process closed or crashed): recorded as interrupted, like their caller. */
  async interruptOrphanedParkedRuns(): Promise<void> {
    await this.parts.projections.catchUp();
    const running = await this.parts.projections.contexts.list({ status: "running" });
    const byId = new Map(running.map((v) => [v.id, v]));
    for (const view of running) {
      const superior = view.lastRun?.superior;
      if (view.awaitingApproval.length === 0 || !superior || this.parts.lifecycle.closed) continue;
      if (byId.get(superior.contextId)?.currentRunId === superior.runId) continue;
      const ac = await this.parts.registry.activate(view.id);
      await ac.serialize(async () => {
        if (!isParked(ac.actor.getSnapshot())) return;
        await ac.underLease(
          async () => {
            const runId = openRunId(ac.actor.getSnapshot());
            if (!runId || ac.view.currentRunId !== runId) return;
            // Through the writer, so the machine follows (a run end read while parked ends it here too).
            await ac.writer.append([
              {
                type: "RunInterrupted",
                data: { runId, reason: "The run that called it ended while it waited for approval." },
              },
            ]);
          },
          { busy: "skip" },
        );
      });
    }
  }

  /** The parked run's approvals that time out, earliest first (read from the log: this is the cold path). */
  private async expiring(input: RunActorInput): Promise<ApprovalView[]> {
    const state = foldEvents(approvalsProjection, await this.parts.store.readStream(input.contextId)).get(
      input.contextId,
    );
    return (state?.approvals ?? [])
      .filter((a) => a.status === "pending" && a.runId === input.runId && a.expiresAt !== null)
      .sort((a, b) => Date.parse(a.expiresAt!) - Date.parse(b.expiresAt!));
  }

  private sleepFor(ms: number, signal: AbortSignal): Promise<void> {
    return this.parts.config.clock.sleep ? this.parts.config.clock.sleep(ms, signal) : sleep(ms, undefined, { signal });
  }

  /** The machine's `approvalTimeout` while parked: denies each approval as it times out; ends when the machine leaves parked. */
  async timeoutActor(input: RunActorInput, signal: AbortSignal): Promise<void> {
    // Once the machine has left parked (a decision, a stop), the run's later approvals are another park's to time.
    while (!signal.aborted && !this.parts.lifecycle.closed) {
      const next = (await this.expiring(input))[0];
      if (!next) return;
      const wait = Date.parse(next.expiresAt!) - this.parts.config.clock.now().getTime();
      if (wait > 0) await this.sleepFor(wait, signal);
      if (signal.aborted || this.parts.lifecycle.closed) return;
      try {
        await this.decide(next.approvalId, { granted: false, by: TIMEOUT_DECIDER, reason: TIMED_OUT });
      } catch {
        // Decided meanwhile, or another process holds the context: look again after a lease's time.
        await this.sleepFor(this.parts.config.limits.leaseTtlMs, signal);
      }
    }
  }
}

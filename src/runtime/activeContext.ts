// An activated context: its actor, its writer, and the in-memory folds of its stream (view and transcript).
import type { AnyActorRef } from "xstate";
import type { RecordedEvent } from "../events/schema.ts";
import type { ContextId } from "../events/ids.ts";
import { contextsProjection, type ContextView } from "../projections/contexts.ts";
import { foldEvents } from "../projections/projection.ts";
import { historyOf, transcriptProjection, type RunTranscript } from "../projections/transcript.ts";
import type { ChatMessage } from "../models/messages.ts";
import type { RunHandle } from "../actors/runHandle.ts";
import { outcomeOf, type RunOutcome } from "../projections/runOutcome.ts";
import type { StreamWriter } from "../actors/streamWriter.ts";

export type { RunOutcome } from "../projections/runOutcome.ts";

export class ActiveContext {
  view: ContextView;
  private readonly runs = new Map<string, RunTranscript>();
  /** The subordinates this context created, in order, with their slots (from its own SubordinateCalled facts). */
  readonly children: { contextId: string; slot: string }[] = [];
  /** Answers of subordinates by the tool call that asked, for `§§result(...)` references. */
  readonly storedResults = new Map<string, string>();
  actor!: AnyActorRef;
  writer!: StreamWriter;
  run: RunHandle | null = null;
  /** Resolves each waiter of a run when its terminal fact is appended. */
  readonly outcomes = new Map<string, { promise: Promise<RunOutcome>; resolve: (o: RunOutcome) => void }>();
  /** Serializes commands (send, stop, pause, resume) to this context. */
  commands: Promise<unknown> = Promise.resolve();
  passivateTimer: NodeJS.Timeout | null = null;
  /** The release of the last run's lease, which the next run's acquire must follow. */
  leaseReleased: Promise<void> = Promise.resolve();

  constructor(
    readonly id: ContextId,
    events: readonly RecordedEvent[],
  ) {
    this.view = contextsProjection.init(id);
    this.apply(events);
  }

  apply(facts: readonly RecordedEvent[]): void {
    for (const f of facts) this.view = contextsProjection.evolve(this.view, f);
    foldEvents(transcriptProjection, facts, this.runs);
    for (const f of facts) {
      if (f.type === "SubordinateCalled" && f.data.fresh) this.children.push({ contextId: f.data.childContextId, slot: f.data.jobId ?? "default" });
      if (f.type === "SubordinateReturned" && f.data.result !== null) this.storedResults.set(f.data.toolCallId, f.data.result);
      const outcome = outcomeOf(f);
      if (outcome) {
        this.outcomes.get(outcome.runId)?.resolve(outcome);
        // Runs of a context are sequential: earlier ones have ended and their waiters hold their promises,
        // so only this run's entry stays (a context taking thousands of messages kept one per run).
        for (const runId of this.outcomes.keys()) if (runId !== outcome.runId) this.outcomes.delete(runId);
      }
    }
  }

  /** The messages the next model call starts from (without the system prompt). */
  transcript(): ChatMessage[] {
    return historyOf(this.runs.values());
  }

  outcome(runId: string): Promise<RunOutcome> {
    let entry = this.outcomes.get(runId);
    if (!entry) {
      let resolve!: (o: RunOutcome) => void;
      const promise = new Promise<RunOutcome>((r) => (resolve = r));
      entry = { promise, resolve };
      this.outcomes.set(runId, entry);
    }
    return entry.promise;
  }

  /** Runs `fn` after every earlier command to this context has finished. */
  serialize<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.commands.then(fn);
    this.commands = result.catch(() => undefined);
    return result;
  }
}

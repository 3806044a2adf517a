// Each tree's budget as this process knows it: folded from `<rootContextId>:budget`, changed by conditional appends.
//
// Requirements:
// - The log is the truth: a tree's state is the fold of its budget stream (projections/budget.ts), read once and
//   then kept current by this process's own appends and, on a shared log, by the facts other processes append.
// - Every change is decided against the folded state and appended with that state's version as the expected
//   version: a reservation is checked in the append that records it, so two processes (or two jobs) cannot
//   both take the last of a budget. A conflict reads what the other writer appended and decides again.
// - Where a reservation is recorded is decided here, and only here. On a log other processes append to, in the
//   tree's budget stream (BudgetReserved, checked as above). On a log with one writer (PGlite), in this process's
//   memory alone: every reservation of the tree is decided in its turn here, so the turn is the check, and the
//   log records what each call spent (its reply's `settles`, a BudgetSettled for a call cut off). A reservation
//   dies with its process either way (a takeover releases one the log holds), so the folded budget after a crash
//   is the same, and a budgeted call appends no more than an unbudgeted one.
// - A reply settles its reservation with no append of its own (ModelReplied's `settles`): this process folds its
//   own replies as they are appended (`replied`) and other processes' as its subscription delivers them. A state
//   that has not seen a settle yet only holds more than the log says; before a call is refused, the replies of
//   the open reservations are read from the log (`readBudget`), so a refusal is exact.
// - Changes to one tree are serialized in this process (no needless conflicts between its own parallel jobs).
// - A tree without a budget costs its model calls nothing but a map lookup after its first.
import { ConcurrencyError } from "../events/errors.ts";
import type { BudgetAmount, DataOf, DomainEvent, RecordedEvent } from "../events/schema.ts";
import { sharedByProcesses, type EventStore } from "../events/store.ts";
import {
  BUDGET_STREAM_SUFFIX,
  type BudgetState,
  budgetStreamOf,
  evolveBudget,
  fitOf,
  foldBudget,
  holdBudget,
  initBudget,
  type Overrun,
  readBudget,
  settleBudget,
  ZERO,
} from "../projections/budget.ts";

export { BUDGET_STREAM_SUFFIX, budgetStreamOf };

/** What a change decided: the facts to append (none: nothing to record) and what to answer. */
export type Decision<R> = { events: DomainEvent[]; result: R };

type Tree = { state: BudgetState; turn: Promise<unknown> };

export class BudgetLedger {
  private readonly trees = new Map<string, Tree>();
  /** Whether reservations are recorded on the log (BudgetReserved): when other processes may append to it. */
  readonly logsReservations: boolean;
  constructor(
    private readonly store: EventStore,
    options: { logsReservations?: boolean } = {},
  ) {
    this.logsReservations = options.logsReservations ?? sharedByProcesses(store);
  }

  /** The tree's state (read from the log the first time this process asks). */
  async state(rootContextId: string): Promise<BudgetState> {
    return (await this.tree(rootContextId)).state;
  }

  /** Reads what the budget stream holds beyond the state known here; `replies`: and the replies that settled open reservations. */
  async refresh(rootContextId: string, replies = true): Promise<BudgetState> {
    const tree = await this.tree(rootContextId);
    tree.state = replies
      ? await readBudget(this.store, rootContextId, tree.state)
      : foldBudget(await this.store.readStream(budgetStreamOf(rootContextId), tree.state.version + 1), tree.state);
    return tree.state;
  }

  /**
   * Decides a change on the tree's current state and appends it conditionally on that state's version; on a
   * conflict, catches up and decides again. `decide` may run more than once and must not have effects.
   */
  change<R>(rootContextId: string, decide: (s: BudgetState) => Decision<R> | Promise<Decision<R>>): Promise<R> {
    return this.serialized(rootContextId, (tree) => this.decideAndAppend(rootContextId, tree, decide));
  }

  private async decideAndAppend<R>(
    rootContextId: string,
    tree: Tree,
    decide: (s: BudgetState) => Decision<R> | Promise<Decision<R>>,
  ): Promise<R> {
    for (;;) {
      const { events, result } = await decide(tree.state);
      if (events.length === 0) return result;
      const expectedVersion = tree.state.version === 0 ? "no_stream" : tree.state.version;
      try {
        const appended = await this.store.append(budgetStreamOf(rootContextId), events, { expectedVersion });
        this.fold(tree, appended.events);
        return result;
      } catch (e) {
        if (!(e instanceof ConcurrencyError)) throw e;
        await this.refresh(rootContextId, false);
      }
    }
  }

  /** Folds the settles of replies this process appended (their reservations are of trees it reserved from). */
  replied(rootContextId: string, facts: readonly RecordedEvent[]): void {
    const tree = this.trees.get(rootContextId);
    if (!tree) return;
    for (const e of facts) if (e.type === "ModelReplied" && e.data.settles) tree.state = evolveBudget(tree.state, e);
  }

  /** Resolves once every change this process asked of the tree so far has been recorded (or failed). */
  quiet(rootContextId: string): Promise<void> {
    return this.serialized(rootContextId, async () => undefined);
  }

  /** Records the reservation when it fits the tree's budget at `nowMs()`; else what it would pass, and the state it was judged on. */
  async reserve(
    rootContextId: string,
    r: DataOf<"BudgetReserved">,
    nowMs: () => number,
  ): Promise<{ over: Overrun; state: BudgetState } | null> {
    if (!this.logsReservations)
      // This process is the log's one writer: what it holds is all there is, and the tree's turn is the check.
      return this.serialized(rootContextId, async (tree) => {
        const over = fitOf(tree.state, r.amount, nowMs());
        if (over) return { over, state: tree.state };
        tree.state = holdBudget(tree.state, r);
        return null;
      });
    const decide = (state: BudgetState): Decision<{ over: Overrun; state: BudgetState } | null> => {
      const over = fitOf(state, r.amount, nowMs());
      return over
        ? { events: [], result: { over, state } }
        : { events: [{ type: "BudgetReserved", data: r }], result: null };
    };
    if ((await this.change(rootContextId, decide)) === null) return null;
    // Refused on what this process knows: settles of other processes' replies may not have reached it yet.
    await this.serialized(rootContextId, () => this.refresh(rootContextId));
    return this.change(rootContextId, decide);
  }

  /**
   * Replaces the reservation by what was spent; a reservation already settled stays as it was. One held in memory
   * alone that spent nothing is let go with no append (the log has nothing of it).
   */
  settle(rootContextId: string, reservationId: string, spent: BudgetAmount): Promise<void> {
    return this.serialized(rootContextId, async (tree) => {
      const held = tree.state.open[reservationId] && !tree.state.logged[reservationId];
      if (held && isZero(spent)) {
        tree.state = settleBudget(tree.state, reservationId, ZERO);
        return;
      }
      await this.decideAndAppend(rootContextId, tree, (s) => ({
        events: s.open[reservationId] ? [{ type: "BudgetSettled", data: { reservationId, spent } }] : [],
        result: undefined,
      }));
    });
  }

  /** Runs `fn` in the tree's turn: nothing else of this process changes the tree meanwhile. */
  serialized<R>(rootContextId: string, fn: (tree: Tree) => Promise<R>): Promise<R> {
    const run = this.tree(rootContextId).then((tree) => {
      const next = tree.turn.then(() => fn(tree));
      tree.turn = next.catch(() => undefined);
      return next;
    });
    return run;
  }

  /**
   * A tree whose root was just created here (`created`: its ContextCreated, with the budget it may carry): its
   * budget stream cannot exist yet (no read on the hot path).
   */
  fresh(rootContextId: string, created: RecordedEvent): void {
    if (!this.trees.has(rootContextId))
      this.trees.set(rootContextId, { state: evolveBudget(initBudget(), created), turn: Promise.resolve() });
  }

  /** A budget fact another process appended (read from the shared log's subscription). */
  observe(e: RecordedEvent): void {
    if (e.type === "ModelReplied") {
      // Whose tree it settles is not in the reply: every tree known here that holds the reservation open.
      if (e.data.settles)
        for (const tree of this.trees.values())
          if (tree.state.open[e.data.settles.reservationId]) tree.state = evolveBudget(tree.state, e);
      return;
    }
    if (!e.streamId.endsWith(BUDGET_STREAM_SUFFIX)) return;
    const tree = this.trees.get(e.streamId.slice(0, -BUDGET_STREAM_SUFFIX.length));
    if (tree && e.streamVersion === tree.state.version + 1) tree.state = evolveBudget(tree.state, e);
  }

  private readonly loading = new Map<string, Promise<Tree>>();
  private tree(rootContextId: string): Promise<Tree> {
    const known = this.trees.get(rootContextId);
    if (known) return Promise.resolve(known);
    let loading = this.loading.get(rootContextId);
    if (!loading) {
      loading = readBudget(this.store, rootContextId).then((state) => {
        const tree: Tree = { state, turn: Promise.resolve() };
        this.trees.set(rootContextId, tree);
        this.loading.delete(rootContextId);
        return tree;
      });
      this.loading.set(rootContextId, loading);
    }
    return loading;
  }

  /** Folds what was appended here; a gap (another writer's facts between) is read from the log next time. */
  private fold(tree: Tree, events: readonly RecordedEvent[]): void {
    for (const e of events) {
      if (e.streamVersion !== tree.state.version + 1) return;
      tree.state = evolveBudget(tree.state, e);
    }
  }
}

const isZero = (a: BudgetAmount): boolean =>
  a.inputTokens === 0 && a.outputTokens === 0 && a.costUsd === 0 && a.modelCalls === 0 && a.toolCalls === 0;

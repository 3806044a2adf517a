// The runtime's parts, built once in the order they depend on each other, and taken down in the reverse order.
//
// Requirements:
// - Configuration first: a bad folder is refused before the log is touched.
// - Each part gets what it uses in its constructor; nothing is assigned after construction. The one loop in
//   the graph (a context's machine invokes runs, runs start and stop contexts) is closed by the registry's
//   run actors, functions that reach the runs only once a run starts.
// - After open: projections caught up, runs a gone process left unfinished taken over (resumed or recorded
//   as interrupted), parked runs whose caller ended recorded as interrupted.
// - On a shared log: one subscription for what other processes append (control requests, budget facts,
//   facts of runs parked here and decided there), and a sweeper that takes over runs of processes that died.
// - `closeParts` leaves no waiter hanging: a run in flight is recorded as interrupted and its waiters answered;
//   a parked run's waiters are rejected as "closed" and the run stays parked in the log. A fresh subordinate
//   whose first run never started gets its ContextCreated first (a SubordinateCalled may name it).
import { hostname } from "node:os";
import { sharedByProcesses, type EventStore } from "../events/store.ts";
import { isInFlight, parkedRun } from "../actors/contextQueries.ts";
import { openProjections, type Projections } from "../projections/engine.ts";
import type { RuntimeOptions } from "./api.ts";
import { Approvals } from "./approvals.ts";
import { BudgetLedger } from "./budgetLedger.ts";
import { Commands } from "./commands.ts";
import { type Configuration, loadConfiguration } from "./configuration.ts";
import { ControlRequests } from "./controlRequests.ts";
import { delegatorOf } from "./delegation.ts";
import { type Leases, localLeases, sqlLeases } from "./leases.ts";
import { Lifecycle } from "./lifecycle.ts";
import { interruptInFlight, Recovery } from "./recovery.ts";
import { Registry } from "./registry.ts";
import { Runs } from "./runs.ts";
import { buildTools, type RuntimeTools } from "./runTools.ts";

/** The parts the facade (runtime.ts) calls; each part below it takes only what it uses. */
export type RuntimeParts = {
  readonly config: Configuration;
  readonly store: EventStore;
  readonly projections: Projections;
  readonly leases: Leases;
  readonly lifecycle: Lifecycle;
  readonly budgets: BudgetLedger;
  readonly registry: Registry;
  readonly recovery: Recovery;
  readonly commands: Commands;
  readonly approvals: Approvals;
  readonly control: ControlRequests;
  readonly tools: RuntimeTools;
  /** Records the runs gone processes left unfinished (see the requirements above). */
  recover(): Promise<void>;
  /** Stops the shared log's subscription and its sweeper. */
  stopFollowing(): void;
  /** Stops following this runtime's appends for spans and live deltas. */
  stopObserving(): void;
};

/** Opens the runtime's parts on a store (see the requirements above). */
export const openParts = async (options: RuntimeOptions): Promise<RuntimeParts> => {
  const config = loadConfiguration(options);
  const store = options.store;
  const projections = await openProjections(store);
  const owner = options.owner ?? `${hostname()}:${process.pid}:${config.clock.uuid().slice(0, 8)}`;
  // A PGlite data dir belongs to one process (its lock sees to that): no other runtime can hold a lease.
  const shared = sharedByProcesses(store);
  const leases = shared
    ? await sqlLeases(store.sql, { owner, ttlMs: config.limits.leaseTtlMs, exclusive: false })
    : localLeases(owner);
  // Spans and live deltas follow the facts this runtime appends, through the store's append hook.
  const stopObserving = config.observer.observe(store);
  const lifecycle = new Lifecycle();
  const budgets = new BudgetLedger(store);
  const registry = new Registry({
    store,
    config,
    leases,
    lifecycle,
    budgets,
    // Invoked only once a run starts, after every part below is built.
    actors: {
      run: (input, signal) => runs.run(input, signal),
      stopRun: (input) => runs.stop(input),
      approvalTimeout: (input, signal) => approvals.timeoutActor(input, signal),
    },
    takeOver: (ac, mode) => recovery.takeOver(ac, mode),
  });
  config.observer.subject = (id) => registry.active.get(id)?.view;
  const recovery = new Recovery({ store, projections, leases, registry, config, lifecycle, budgets });
  const commands = new Commands({ registry, config, store, lifecycle });
  const approvals = new Approvals({ projections, registry, store, config, lifecycle });
  const tools = buildTools(delegatorOf({ config, registry, commands, store }), config);
  const runs = new Runs({ config, store, registry, tools, commands, approvals, budgets, lifecycle });
  const control = new ControlRequests({ store, projections, leases, registry, commands, recovery, config, lifecycle });
  const recover = async (): Promise<void> => {
    await recovery.recoverInterruptedRuns();
    await approvals.interruptOrphanedParkedRuns();
  };
  await recover();
  // On a shared log, one subscription (each reads the log on its own) for what other processes append:
  // requests for runs this one drives, and facts of runs parked here and decided there (`followLog`).
  const stopAnswering = shared
    ? store.subscribe(
        await store.headPosition(),
        (e) => {
          control.answer(e);
          budgets.observe(e);
          registry.followLog(e);
        },
        // This process applied its own appends as they returned: reading them back cost a fresh delegation
        // about four range reads of its 18 events, a sixth of the process's CPU on PostgreSQL.
        { othersOnly: true },
      )
    : () => undefined;
  // Other processes may die at any time: take over their unfinished runs once their leases expire.
  const sweeper = shared ? setInterval(() => void recover().catch(() => undefined), config.limits.leaseTtlMs) : null;
  sweeper?.unref();
  const stopFollowing = () => {
    if (sweeper) clearInterval(sweeper);
    stopAnswering();
  };
  const parts = {
    config,
    store,
    projections,
    leases,
    lifecycle,
    budgets,
    registry,
    recovery,
    commands,
    approvals,
    control,
    tools,
  };
  return { ...parts, recover, stopFollowing, stopObserving };
};

/** Takes the parts down (see the requirements above); the observer stops last, once every end is recorded. */
export const closeParts = async (parts: RuntimeParts): Promise<void> => {
  const { lifecycle, registry } = parts;
  lifecycle.close();
  parts.stopFollowing();
  const actives = [...registry.active.values()];
  // What the machines say before they stop: which runs are in flight, which ended unrecorded, which are parked.
  // A parked run is not in flight: it stays parked on the log, for this or another process to go on with.
  const atClose = actives.map((ac) => {
    const s = ac.actor.getSnapshot();
    return { ac, inFlight: isInFlight(s), unrecorded: s.context.unrecorded, parked: parkedRun(s) };
  });
  // A fresh child whose run never started is not on the log yet, though its caller's SubordinateCalled may name it.
  await Promise.all(actives.map((ac) => registry.recordOpening(ac.id).catch(() => undefined)));
  // Stopping the roots stops every actor below them, which aborts every run in flight.
  for (const ac of actives) {
    ac.stayActive();
    if (ac.view.depth === 0 || !registry.active.has(ac.view.parentContextId ?? "")) ac.actor.stop();
  }
  await interruptInFlight(atClose);
  // Then every waiter not answered by that (a parked run's, which stays parked in the log) is failed, so none hangs.
  for (const { ac, parked } of atClose) ac.failUnanswered(parked);
  registry.active.clear();
  await parts.leases.close();
  await parts.tools.close();
  await parts.projections.catchUp();
  parts.stopObserving();
};

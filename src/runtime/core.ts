// What the runtime's parts share: the configuration, the log, the projections, the leases, the actors.
import type { EventStore } from "../events/store.ts";
import type { BudgetLedger } from "./budgetLedger.ts";
import type { Projections } from "../projections/engine.ts";
import type { Configuration } from "./configuration.ts";
import type { Leases } from "./leases.ts";
import type { Registry } from "./registry.ts";
import type { RuntimeTools } from "./runTools.ts";

export type Core = {
  readonly config: Configuration;
  readonly store: EventStore;
  readonly projections: Projections;
  readonly leases: Leases;
  readonly registry: Registry;
  tools: RuntimeTools;
  /** Each tree's budget, folded from its budget stream. */
  readonly budgets: BudgetLedger;
  closed: boolean;
};

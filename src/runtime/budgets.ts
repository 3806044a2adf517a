// Budgets of delegation trees: set, extended and reported by the runtime, reserved and settled by runs.
//
// Requirements:
// - A budget is checked before anything is written: an object of known keys, each a whole number ≥ 0 (`costUsd`
//   any number ≥ 0), at least one key; a refusal names the field.
// - A root's budget comes from `createContext({ budget })`, else its project's, else its profile's, and rides on
//   its ContextCreated. A message's budget (`send(id, text, { budget })`) is added to what the tree has spent and
//   holds when it arrives (BudgetSet).
// - Before each model call of a budgeted tree, the run reserves its counted input tokens (the request as it will be
//   sent, the results it staged included) plus its preset's `maxOutputTokens` (else `limits.defaultMaxOutputTokens`),
//   priced by the preset's `price`, against the tree (budgetLedger.ts decides and says where it is recorded); the
//   reply settles it to the real usage (ModelReplied carries the settle: no append of its own).
// - A call that does not fit records BudgetExhausted in the run's stream, in the tree's turn (an extension of
//   this process cannot slip in between), and parks; when the stream shows an extension another process
//   appended meanwhile, BudgetRestored follows at once (settles of other calls never wake it).
// - `extendBudget` adds to the limits, then restores every run of the tree parked on it (each reserves again,
//   and parks again when the extension was not enough). A stop ends a parked run like any other.
import { asContextId, asRunId, type ContextId } from "../events/ids.ts";
import { BudgetLimits, type BudgetAmount, type RecordedEvent } from "../events/schema.ts";
import { tokenCounterFor } from "../models/tokenCount.ts";
import { stepMessageOf } from "../projections/transcript.ts";
import { type EffectiveModel, type Preset, presetTable } from "../models/presets.ts";
import { type BudgetState, fitOf, limitsFrom, type TreeBudget, treeBudgetOf, ZERO } from "../projections/budget.ts";
import type { BudgetPort, Reservation } from "../actors/budgetGate.ts";
import type { RunHandle } from "../actors/runHandle.ts";
import type { ContextSession } from "./contextSession.ts";
import type { EventStore } from "../events/store.ts";
import type { Projections } from "../projections/engine.ts";
import type { BudgetLedger } from "./budgetLedger.ts";
import type { Configuration } from "./configuration.ts";
import type { Registry } from "./registry.ts";
import { invalid } from "./validate.ts";

/** What the budget commands use of the runtime's parts. */
export type BudgetParts = {
  readonly budgets: BudgetLedger;
  readonly config: Configuration;
  readonly store: EventStore;
  readonly projections: Projections;
  readonly registry: Registry;
};

/** `budget` as given by an embedder, the CLI or HTTP: the limits, or a refusal naming the field. */
export const checkBudget = (field: string, v: unknown): BudgetLimits => {
  const parsed = BudgetLimits.safeParse(v);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = [field, ...issue.path.map(String)].join(".");
    throw invalid(
      where,
      "a budget: any of inputTokens, outputTokens, totalTokens, modelCalls, toolCalls, wallClockMs (whole numbers ≥ 0), costUsd (≥ 0)",
      issue.message,
    );
  }
  if (Object.keys(parsed.data).length === 0) throw invalid(field, "a budget with at least one limit", "{}");
  return parsed.data;
};

const priceOf = (preset: Preset | undefined, inputTokens: number, outputTokens: number): number =>
  preset?.price ? (inputTokens * preset.price.inputPerMTok + outputTokens * preset.price.outputPerMTok) / 1e6 : 0;

/** What a replied call spent: its usage (the counted input when the model reports none), priced by its preset. */
export const spentOf = (
  preset: Preset | undefined,
  countedInput: number,
  usage: { inputTokens: number; outputTokens: number } | null,
  toolCalls: number,
): BudgetAmount => {
  const inputTokens = usage?.inputTokens ?? countedInput;
  const outputTokens = usage?.outputTokens ?? 0;
  return { inputTokens, outputTokens, costUsd: priceOf(preset, inputTokens, outputTokens), modelCalls: 1, toolCalls };
};

/** Sets the tree's limits to `budget` added to what it has spent and holds now (a message's budget). */
export const setBudget = (
  parts: Pick<BudgetParts, "budgets" | "config">,
  rootContextId: string,
  budget: BudgetLimits,
): Promise<void> =>
  parts.budgets.change(rootContextId, (s) => ({
    events: [
      {
        type: "BudgetSet",
        data: {
          rootContextId: asContextId(rootContextId),
          limits: limitsFrom(s, budget, parts.config.clock.now().getTime()),
        },
      },
    ],
    result: undefined,
  }));

/** What `rt.budget(rootId)` answers. */
export type BudgetReport = TreeBudget & {
  /** Runs of the tree parked because their next call did not fit. */
  parked: { contextId: string; runId: string; limit: string; step: number }[];
};

/** The runs of the tree parked on its budget now, with the BudgetExhausted each waits on (read from the log: the cold path). */
const parkedRuns = async (
  parts: BudgetParts,
  rootContextId: string,
): Promise<{ contextId: string; fact: Extract<RecordedEvent, { type: "BudgetExhausted" }> }[]> => {
  await parts.projections.catchUp();
  const running = await parts.projections.contexts.list({ rootContextId, status: "running" });
  const out: { contextId: string; fact: Extract<RecordedEvent, { type: "BudgetExhausted" }> }[] = [];
  for (const view of running) {
    if (view.awaitingApproval.length === 0) continue;
    for (const f of await parts.store.readStream(view.id)) {
      if (
        f.type === "BudgetExhausted" &&
        f.data.runId === view.currentRunId &&
        view.awaitingApproval.includes(f.data.exhaustionId)
      )
        out.push({ contextId: view.id, fact: f });
    }
  }
  return out.sort((a, b) => a.fact.globalPosition - b.fact.globalPosition);
};

export const budgetReport = async (parts: BudgetParts, rootContextId: string): Promise<BudgetReport> => {
  // Settles this process has asked for are recorded first (a run's last reply settles behind its end).
  await parts.budgets.quiet(rootContextId);
  const s: BudgetState = await parts.budgets.refresh(rootContextId);
  const parked = (await parkedRuns(parts, rootContextId)).map(({ contextId, fact }) => ({
    contextId,
    runId: fact.data.runId,
    limit: fact.data.limit,
    step: fact.data.step,
  }));
  return { ...treeBudgetOf(rootContextId, s), parked };
};

/** Lets a parked run go on: records BudgetRestored for it, in its context's turn and under its lease. */
const restore = async (parts: BudgetParts, contextId: string, exhaustionId: string, runId: string): Promise<void> => {
  const ac = await parts.registry.activate(contextId);
  // Another process driving it takes the extension when its run reserves again.
  await ac.serialize(() =>
    ac.underLease(
      () =>
        ac.writer.exclusive(async (append) => {
          if (!ac.actor.getSnapshot().can({ type: "approval.decide", approvalId: exhaustionId, facts: [] })) return;
          await append([{ type: "BudgetRestored", data: { exhaustionId, runId: asRunId(runId) } }]);
        }),
      { busy: "skip" },
    ),
  );
};

/** Adds `more` to the tree's limits, then lets every run parked on its budget go on. */
export const extendBudget = async (parts: BudgetParts, rootContextId: string, more: BudgetLimits): Promise<void> => {
  await parts.budgets.change(rootContextId, () => ({
    events: [{ type: "BudgetExtended", data: { rootContextId: asContextId(rootContextId), more } }],
    result: undefined,
  }));
  for (const { contextId, fact } of await parkedRuns(parts, rootContextId))
    await restore(parts, contextId, fact.data.exhaustionId, fact.data.runId);
};

/** The budget port of one run (see budgetGate.ts): reserves from its tree, parks it when the call does not fit. */
export const budgetPortFor = (
  parts: Pick<BudgetParts, "budgets" | "config">,
  ac: ContextSession,
  handle: RunHandle,
  model: EffectiveModel,
): BudgetPort => {
  const root = ac.view.rootContextId;
  const preset = model.presetName === null ? undefined : presetTable(parts.config.options.presets)[model.presetName];
  const metadata = { correlationId: handle.correlationId, causationId: handle.runId };
  return {
    async reserve({ step, messages, tools, summary }) {
      if ((await parts.budgets.state(root)).limits === null) return { reserved: null };
      const counter = await tokenCounterFor(model.model);
      // The request as it will be sent: the transcript, and what the run staged for the call's ModelCalled to take
      // (the last step's tool results), counted once the appends under way have reached the transcript.
      const inputTokens = await ac.writer.exclusive(async () => {
        const staged = summary ? [] : ac.writer.stagedEvents.flatMap((e) => stepMessageOf(e) ?? []);
        return counter.request({ messages: [...messages(), ...staged], tools: [...tools] });
      });
      const outputTokens = preset?.maxOutputTokens ?? parts.config.limits.defaultMaxOutputTokens;
      const asked: BudgetAmount = {
        inputTokens,
        outputTokens,
        costUsd: priceOf(preset, inputTokens, outputTokens),
        modelCalls: 1,
        toolCalls: 0,
      };
      const reservationId = parts.config.clock.uuid();
      const now = () => parts.config.clock.now().getTime();
      const refused = await parts.budgets.reserve(
        root,
        { reservationId, contextId: ac.id as ContextId, runId: handle.runId, step, amount: asked },
        now,
      );
      if (refused === null) return { reserved: reservationOf(parts, root, reservationId, preset, inputTokens) };
      const parked = await parts.budgets.serialized(root, async () => {
        const { over, state: s } = refused;
        const exhaustionId = parts.config.clock.uuid();
        const facts = await ac.writer.append(
          [
            {
              type: "BudgetExhausted",
              data: {
                exhaustionId,
                runId: handle.runId,
                step,
                rootContextId: asContextId(root),
                limit: over.limit,
                limits: s.limits ?? {},
                spent: s.spent,
                reserved: s.reserved,
                asked,
              },
            },
          ],
          metadata,
        );
        // An extension appended meanwhile (by any process, or before this turn): go on at once. Only an
        // extension: settles that freed reservations do not wake it (that would spin while others hold them).
        const latest = await parts.budgets.refresh(root);
        if (JSON.stringify(latest.limits) !== JSON.stringify(s.limits) && fitOf(latest, asked, now()) === null) {
          facts.push(
            ...(await ac.writer.append(
              [{ type: "BudgetRestored", data: { exhaustionId, runId: handle.runId } }],
              metadata,
            )),
          );
        }
        return facts;
      });
      return { parked };
    },
  };
};

/**
 * Settled by the call's ModelReplied (`settles`), or by an append of its own: released when no reply comes, spent
 * when the reply is no ModelReplied (a compaction's summary).
 */
const reservationOf = (
  parts: Pick<BudgetParts, "budgets">,
  root: string,
  reservationId: string,
  preset: Preset | undefined,
  countedInput: number,
): Reservation => ({
  settles: (usage, toolCalls) => ({ reservationId, spent: spentOf(preset, countedInput, usage, toolCalls) }),
  release: (cut) =>
    parts.budgets.settle(
      root,
      reservationId,
      cut
        ? {
            inputTokens: countedInput,
            outputTokens: 0,
            costUsd: priceOf(preset, countedInput, 0),
            modelCalls: 1,
            toolCalls: 0,
          }
        : ZERO,
    ),
  spend: (usage) => parts.budgets.settle(root, reservationId, spentOf(preset, countedInput, usage, 0)),
});

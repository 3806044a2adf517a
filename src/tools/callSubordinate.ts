// `call_subordinate`: delegate to a child context one level down, fresh or continued (DESIGN §5, rules in order).
//
// Requirements:
// - An empty `message` is refused before anything else, and nothing is created.
// - Rule 1: an unknown (or disabled) profile is refused, naming the available ones.
// - Rule 2: `context_id` with reset=true is refused.
// - Rule 3: `context_id` must name a child of the caller (parent id, parent number, number + 1); without it
//   the newest child in the caller's slot is continued, or a fresh one created when there is none.
// - Rule 4: continuing with another non-empty profile is refused. Rule 5: so is continuing a running child.
// - Rule 6: a fresh child is A<n+1>, named from `name`, the message's first 80 characters or `A<n+1>`,
//   inherits the project, and copies the caller's model override only when its configured preset is Default;
//   a child of a remote profile is of kind `remote` (its runs are A2A tasks of that agent, runtime/remoteRun.ts).
// - Rule 7: a non-empty `name` renames the child; it never renames the caller.
// - The child runs in its own actor and stream; its answer returns with its `context_id`, and an answer of
//   LEN_MIN characters or more gets a hint that it can be referenced instead of rewritten.
// - A stopped child gives the caller a repairable "was stopped" error; a failed one names the reason;
//   when the caller itself is stopped it gets no result.
// - Guards: maximum depth and maximum live children per run, each a repairable error.
// - A fresh child costs no append of its own: the caller's SubordinateCalled goes out first, then the child's
//   ContextCreated opens its first run's append (with MessageReceived, RunStarted, ModelCalled). A delegation
//   that starts no run for a fresh child (stopped, cancelled, refused) records its ContextCreated alone.
// - Resumed after a restart: a call whose SubordinateCalled is on the log takes the answer of the child run
//   it started (recorded, or awaited while that run resumes too), starting it only if it never started;
//   the child is never sent the message twice. A fresh child the restart found with no stream (cut off
//   before its first append) is created as rule 6 made it, with the same id, and its run starts here once.
//   A call with nothing on the log is made as new.
import { z } from "zod";
import type { ContextView } from "../projections/contexts.ts";
import { describeProfileKeys, PROFILE_DEFAULT } from "../profiles/profiles.ts";
import { DEFAULT_PRESET } from "../models/presets.ts";
import { asContextId, type ContextId } from "../events/ids.ts";
import type { DataOf } from "../events/schema.ts";
import { defineTool, RepairableToolError, type ToolContext } from "./defineTool.ts";
import { resultReference } from "./references.ts";
import { runScopeOf, type Delegator, type RunScope } from "./delegator.ts";
import type { RunOutcome } from "../projections/runOutcome.ts";

/** Results this long or longer are stored and referenced with a hint. */
export const LEN_MIN = 500;
export const DEFAULT_SLOT = "default";

export const CallSubordinateInput = z.object({
  message: z.unknown().optional(),
  reset: z.unknown().optional(),
  context_id: z.string().optional(),
  agent_id: z.string().optional(),
  profile: z.string().optional(),
  agent_profile: z.string().optional(),
  name: z.string().optional(),
});
export type CallSubordinateInput = z.infer<typeof CallSubordinateInput>;

/** `true`, or the string "true" in any case with any surrounding space; anything else continues. */
export const isReset = (reset: unknown): boolean =>
  reset === true || (typeof reset === "string" && reset.trim().toLowerCase() === "true");

const collapse = (s: string) => s.replace(/\s+/g, " ").trim();

export const MSG = {
  emptyMessage: "call_subordinate requires a non-empty `message`.",
  unknownProfile: (p: string, available: string) =>
    `Agent profile '${p}' not found. Use one of the available profiles: ${available}.`,
  contextIdWithReset:
    "`context_id` continues an existing subordinate and requires reset=false. Omit `context_id` to create a fresh subordinate.",
  notFound: (id: string, n: number) => `Subordinate context '${id}' was not found under A${n}.`,
  profileChange: (current: string, requested: string) =>
    `Subordinate already uses profile '${current}'. Set reset=true and omit \`context_id\` to switch to '${requested}'.`,
  running: (id: string) =>
    `Subordinate context '${id}' is still running. Wait for it to finish or stop it before continuing it.`,
  stopped: (id: string) => `Subordinate context '${id}' was stopped.`,
  failed: (id: string, reason: string, message: string) => `Subordinate context '${id}' failed (${reason}): ${message}`,
  depth: (n: number, max: number) =>
    `Cannot create A${n}: the maximum delegation depth is ${max}. Do this part yourself or give it back to your superior.`,
  liveChildren: (max: number) =>
    `Cannot start another subordinate: this run already has ${max} running, the maximum. Wait for one to finish.`,
} as const;

/** What a delegation resolves to before it is rendered for the model. */
export type Delegation = { child: ContextView; fresh: boolean };

export const callSubordinateTool = (rt: Delegator) =>
  defineTool({
    name: "call_subordinate",
    description: "Delegate a task to a subordinate agent one level below you.",
    input: CallSubordinateInput,
    run: (input, ctx) => delegate(rt, input, ctx),
    resume: (input, ctx) => resumeDelegation(rt, input, ctx),
    // SubordinateCalled carries the caller's ToolCalled: the child it names runs only after that append.
    recordsCall: true,
  });

/** Runs one delegation end to end and returns the text for the caller's model. */
export const delegate = async (rt: Delegator, input: CallSubordinateInput, ctx: ToolContext): Promise<string> => {
  const message = typeof input.message === "string" ? input.message.trim() : "";
  if (message === "") throw new RepairableToolError(MSG.emptyMessage);
  const handle = runScopeOf(ctx);
  if (!handle || handle.runId !== ctx.runId) throw new Error("call_subordinate ran outside its caller's run");
  // Check and reserve in one synchronous step: parallel jobs all pass here before any of their children is running.
  if (handle.runningChildren.size + handle.reservedChildren >= rt.limits.maxLiveChildrenPerRun) {
    throw new RepairableToolError(MSG.liveChildren(rt.limits.maxLiveChildrenPerRun));
  }
  handle.reservedChildren += 1;
  const release = () => void (handle.reservedChildren -= 1);
  let child: ContextView, fresh: boolean, childId: ContextId;
  let created: string | null = null;
  try {
    // A job cancelled (or a caller stopped) meanwhile must not start, nor record anything after its run ended.
    if (ctx.signal.aborted) throw new Error("stopped");
    ({ child, fresh } = await findOrCreate(rt, handle, input, message, ctx));
    if (fresh) created = child.id;
    if (ctx.signal.aborted) throw new Error("stopped");
    ctx.reportSubordinate?.(child.id);
    childId = asContextId(child.id);
    await handle.append(
      [
        {
          type: "SubordinateCalled",
          data: {
            runId: ctx.runId,
            toolCallId: ctx.toolCallId,
            childContextId: childId,
            fresh,
            jobId: ctx.jobId ?? null,
          },
        },
      ],
      { correlationId: handle.correlationId, causationId: ctx.toolCallId },
    );
  } catch (e) {
    release();
    // A fresh child whose run will not start is recorded all the same, as it was created (its opening waited for that run).
    if (created !== null) await rt.recordOpening(created).catch(() => undefined);
    throw e;
  }
  handle.runningChildren.add(childId);
  release();
  return follow(rt, handle, ctx, child, message, null);
};

/** A delegation a restart cut off: its child's run continues (or starts, if it never did) and answers the caller. */
export const resumeDelegation = async (
  rt: Delegator,
  input: CallSubordinateInput,
  ctx: ToolContext,
): Promise<string> => {
  const handle = runScopeOf(ctx);
  if (!handle || handle.runId !== ctx.runId) throw new Error("call_subordinate ran outside its caller's run");
  const childId = handle.subordinateCalledBy(ctx.toolCallId);
  // Its SubordinateCalled never reached the log: no child ran for it, so the delegation is made as new.
  if (childId === undefined) return delegate(rt, input, ctx);
  const message = typeof input.message === "string" ? input.message.trim() : "";
  const live = await rt.lookup(childId);
  // A fresh child's ContextCreated goes out with its first run, after the caller's SubordinateCalled: the restart
  // came between the two. The child is created now as rule 6 made it then, and its run starts once, here.
  const child =
    live ??
    (await rt.create(
      freshChildData(rt, handle.view(), input, message, ctx.jobId ?? DEFAULT_SLOT, asContextId(childId)),
    ));
  ctx.reportSubordinate?.(childId);
  handle.runningChildren.add(asContextId(childId));
  return follow(
    rt,
    handle,
    ctx,
    child,
    message,
    live ? () => rt.runFor(childId, { runId: ctx.runId, toolCallId: ctx.toolCallId }) : null,
  );
};

/** Runs the child (or takes the run `recorded` finds), waits for its end and renders it for the caller's model. */
const follow = async (
  rt: Delegator,
  handle: RunScope,
  ctx: ToolContext,
  child: ContextView,
  message: string,
  recorded: (() => Promise<{ ended: Promise<RunOutcome> } | null>) | null,
): Promise<string> => {
  const caller = handle.view();
  const childId = asContextId(child.id);
  let outcome;
  // A stop or cancel that lands while the child is being set up finds nothing running to stop (a job's
  // cancel does not even know the child yet), so the delegation stops its child itself.
  const stopChild = () => void rt.stop(childId).catch(() => null);
  try {
    if (ctx.signal.aborted) throw new Error("stopped");
    const started =
      (recorded ? await recorded() : null) ??
      (await rt.startRun(childId, message, {
        contextId: asContextId(caller.id),
        runId: ctx.runId,
        toolCallId: ctx.toolCallId,
        jobId: ctx.jobId ?? null,
      }));
    // Another runtime process is driving the child right now: for the model, it is running.
    if (started === "busy") throw new RepairableToolError(MSG.running(childId));
    const { ended } = started;
    ctx.signal.addEventListener("abort", stopChild, { once: true });
    if (ctx.signal.aborted) stopChild();
    outcome = await ended;
  } finally {
    ctx.signal.removeEventListener("abort", stopChild);
    handle.runningChildren.delete(childId);
    // The caller's SubordinateCalled names the child: if no run of it started, its ContextCreated goes out alone.
    await rt.recordOpening(childId).catch(() => undefined);
  }
  // The caller was stopped meanwhile: it gets no result, and its stream is closed for this run.
  if (ctx.signal.aborted) throw new Error("stopped");

  const outcomeKind = outcome.status === "completed" ? "completed" : outcome.status;
  // The tool's own result follows at once; both reach the log with the caller's next append.
  handle.stage(
    [
      {
        type: "SubordinateReturned",
        data: {
          runId: ctx.runId,
          toolCallId: ctx.toolCallId,
          childContextId: childId,
          outcome: outcomeKind,
          result: outcome.response,
          reason: outcome.failure ? `${outcome.failure.reason}: ${outcome.failure.message}` : null,
        },
      },
    ],
    { correlationId: handle.correlationId, causationId: ctx.toolCallId },
  );
  if (outcome.status === "stopped") throw new RepairableToolError(MSG.stopped(childId));
  if (outcome.status === "failed")
    throw new RepairableToolError(MSG.failed(childId, outcome.failure!.reason, outcome.failure!.message));
  return renderResult(childId, child.agentNumber, outcome.response ?? "", ctx.toolCallId);
};

/** The child's answer for the caller's model, with its context id, and the reference hint when long. */
export const renderResult = (childId: string, agentNumber: number, response: string, toolCallId: string): string => {
  const footer = `\n\n(from A${agentNumber}, context_id: ${childId}; continue it with call_subordinate {"context_id": "${childId}", "reset": false})`;
  if (response.length < LEN_MIN) return response + footer;
  return (
    response +
    footer +
    `\nThis result is stored: to pass it on, write ${resultReference(toolCallId)} in a later tool argument instead of rewriting it.`
  );
};

const findOrCreate = async (
  rt: Delegator,
  scope: RunScope,
  input: CallSubordinateInput,
  message: string,
  ctx: ToolContext,
): Promise<Delegation> => {
  const requestedProfile = (input.profile ?? input.agent_profile ?? "").trim();
  const contextId = (input.context_id ?? input.agent_id ?? "").trim();
  const reset = isReset(input.reset);
  const name = input.name?.trim() ?? "";
  const caller = scope.view();

  // Rule 1: the profile must exist and be enabled in the caller's project (the child inherits it).
  const enabled = rt.enabledProfiles(caller.project);
  if (requestedProfile !== "" && !enabled.includes(requestedProfile)) {
    throw new RepairableToolError(MSG.unknownProfile(requestedProfile, describeProfileKeys(enabled, rt.profiles)));
  }
  // Rule 2.
  if (contextId !== "" && reset) throw new RepairableToolError(MSG.contextIdWithReset);

  // The caller's own stream says which children it made (SubordinateCalled), so no projection is read here.
  let existing: ContextView | undefined;
  if (!reset) {
    if (contextId !== "") {
      // Rule 3, by id: only the caller's own children, by recorded parent, parent number and number.
      const known = scope.children.some((c) => c.contextId === contextId);
      const view = known ? await rt.view(contextId) : null;
      const isChild =
        view !== null &&
        view.parentContextId === caller.id &&
        view.parentAgentNumber === caller.agentNumber &&
        view.agentNumber === caller.agentNumber + 1;
      if (!isChild) throw new RepairableToolError(MSG.notFound(contextId, caller.agentNumber));
      existing = view;
    } else {
      // Rule 3, by slot: the newest child in the caller's slot.
      const slot = ctx.jobId ?? DEFAULT_SLOT;
      const newest = [...scope.children].reverse().find((c) => c.slot === slot);
      existing = newest ? await rt.view(newest.contextId) : undefined;
    }
  }

  if (existing) {
    const live = existing;
    // Rule 4.
    const current = live.profile || PROFILE_DEFAULT;
    if (requestedProfile !== "" && requestedProfile !== current)
      throw new RepairableToolError(MSG.profileChange(current, requestedProfile));
    // Rule 5.
    if (live.status === "running") throw new RepairableToolError(MSG.running(live.id));
    // Rule 7.
    if (name !== "" && name !== live.name) {
      return { child: await rt.rename(live.id, name), fresh: false };
    }
    return { child: live, fresh: false };
  }

  // Rule 6: a fresh child.
  const number = caller.agentNumber + 1;
  if (caller.depth + 1 > rt.limits.maxDepth) throw new RepairableToolError(MSG.depth(number, rt.limits.maxDepth));
  const child = await rt.create(
    freshChildData(rt, caller, input, message, ctx.jobId ?? DEFAULT_SLOT, asContextId(rt.clock.uuid())),
  );
  return { child, fresh: true };
};

/**
 * Rule 6: the ContextCreated of a fresh child `id` of `caller`, from the call's arguments. A function of its
 * inputs, so a restart that finds the child not yet recorded creates it as the cut-off call would have.
 */
export const freshChildData = (
  rt: Pick<Delegator, "configuredPresetOf" | "profiles">,
  caller: ContextView,
  input: CallSubordinateInput,
  message: string,
  slot: string,
  id: ContextId,
): DataOf<"ContextCreated"> => {
  const number = caller.agentNumber + 1;
  const profile = (input.profile ?? input.agent_profile ?? "").trim() || PROFILE_DEFAULT;
  const name = input.name?.trim() ?? "";
  const childName = name || collapse(message).slice(0, 80) || `A${number}`;
  const project = caller.project;
  const inheritsOverride = rt.configuredPresetOf(profile, project) === DEFAULT_PRESET;
  return {
    contextId: id,
    name: childName,
    label: childName,
    profile,
    project,
    agentNumber: number,
    depth: caller.depth + 1,
    // A remote profile's child runs its tasks at that agent (runtime/remoteRun.ts), not here.
    kind: rt.profiles.get(profile)?.remote ? "remote" : "subordinate",
    parentContextId: asContextId(caller.id),
    parentAgentNumber: caller.agentNumber,
    rootContextId: asContextId(caller.rootContextId),
    slot,
    modelOverride: inheritsOverride ? caller.modelOverride : null,
  };
};

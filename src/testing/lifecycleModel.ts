// A reference model of the lifecycle and delegation rules (DESIGN §4, §5): a small pure state machine over one delegation tree.
//
// Requirements:
// - Contexts are numbered by creation (c0 is the root); each has number, depth, parent, status, paused,
//   and, while running, where its run waits: on its model call, on a child, or paused at a checkpoint.
// - Every command is a pure function `(model) => model`; the model-based suite runs each one on this
//   model and on a real runtime, then compares them.
// - The rules restated: a message starts a run on a non-running context; a run waits at a checkpoint
//   (before a model call) while paused; a reply ends the run unless an intervention is undelivered;
//   a retryable model failure is retried `modelRetries` times; a delegation creates or continues a child
//   one level down (depth guard, "still running" refusal); a child's end gives its caller the next step;
//   stopping a caller stops its running child first, down the tree, and the caller gets no result;
//   stopping a child alone gives the caller the next step; a restart or a crash ends every run as failed,
//   except a user's run parked on an approval: it stays parked (a parked child ends with its caller). A call that needs approval parks the run; a grant,
//   a denial or the timeout (which decides every parked call at once) gives it its next step.

export type RunWait = "model" | "child" | "paused" | "approval";
export type ModelStatus = "idle" | "running" | "stopped" | "failed";

export type ModelContext = {
  /** Index in creation order: c0 is the root. */
  index: number;
  number: number;
  depth: number;
  parent: number | null;
  status: ModelStatus;
  paused: boolean;
  /** Where the current run waits; null unless running. */
  wait: RunWait | null;
  /** The child the current run waits on (wait = "child"). */
  waitingOn: number | null;
  /** The context whose run called this run (a direct call), null for a user's run. */
  superior: number | null;
  /** Attempt number of the open model call. */
  attempt: number;
  /** Interventions recorded since the last model call started. */
  undelivered: number;
  /** Children in creation order (all in the default slot). */
  children: number[];
  /** Why the last run failed, when failed. */
  failure: "model_error" | "interrupted" | null;
};

export type LifecycleModel = {
  contexts: ModelContext[];
  maxDepth: number;
  modelRetries: number;
};

export type DelegateMode = { kind: "fresh" } | { kind: "default" } | { kind: "byId"; child: number };

export const initialModel = (limits: { maxDepth: number; modelRetries: number }): LifecycleModel => ({
  contexts: [newContext(0, null, 0)],
  maxDepth: limits.maxDepth,
  modelRetries: limits.modelRetries,
});

const newContext = (index: number, parent: number | null, number: number): ModelContext => ({
  index,
  number,
  depth: number,
  parent,
  status: "idle",
  paused: false,
  wait: null,
  waitingOn: null,
  superior: null,
  attempt: 0,
  undelivered: 0,
  children: [],
  failure: null,
});

const clone = (m: LifecycleModel): LifecycleModel => ({
  ...m,
  contexts: m.contexts.map((c) => ({ ...c, children: [...c.children] })),
});
const ctx = (m: LifecycleModel, i: number): ModelContext => {
  const c = m.contexts[i];
  if (!c) throw new Error(`reference model: no context c${i}`);
  return c;
};

/** The run goes to its next step: it waits at the checkpoint while paused, else a model call opens. */
const nextStep = (m: LifecycleModel, i: number): void => {
  const c = ctx(m, i);
  c.waitingOn = null;
  if (c.paused) {
    c.wait = "paused";
    return;
  }
  c.wait = "model";
  c.attempt = 1;
  c.undelivered = 0;
};

const startRun = (m: LifecycleModel, i: number, superior: number | null): void => {
  const c = ctx(m, i);
  Object.assign(c, { status: "running", paused: false, superior, failure: null, undelivered: 0 });
  nextStep(m, i);
};

/** The run ends; a superior waiting on it gets the result (or the repairable error) and takes its next step. */
const endRun = (
  m: LifecycleModel,
  i: number,
  status: "idle" | "stopped" | "failed",
  failure: ModelContext["failure"] = null,
): void => {
  const c = ctx(m, i);
  const superior = c.superior;
  Object.assign(c, { status, wait: null, waitingOn: null, superior: null, failure, undelivered: 0, attempt: 0 });
  if (status === "stopped") c.paused = false;
  if (superior !== null && ctx(m, superior).waitingOn === i) nextStep(m, superior);
};

/** Stops a run and, first, the running child it waits on, down the tree; nobody in the cascade gets a result. */
const stopCascade = (m: LifecycleModel, i: number): void => {
  const c = ctx(m, i);
  if (c.wait === "child" && c.waitingOn !== null) stopCascade(m, c.waitingOn);
  Object.assign(c, {
    status: "stopped",
    paused: false,
    wait: null,
    waitingOn: null,
    superior: null,
    undelivered: 0,
    attempt: 0,
    failure: null,
  });
};

// ------------------------------------------------------------------------------------------ commands

export const canSend = (m: LifecycleModel, i: number) =>
  m.contexts[i] !== undefined && m.contexts[i]!.status !== "running";
export const send = (m0: LifecycleModel, i: number): LifecycleModel => {
  const m = clone(m0);
  startRun(m, i, null);
  return m;
};

export const canIntervene = (m: LifecycleModel, i: number) => m.contexts[i]?.status === "running";
export const intervene = (m0: LifecycleModel, i: number): LifecycleModel => {
  const m = clone(m0);
  const c = ctx(m, i);
  c.undelivered += 1;
  c.paused = false;
  if (c.wait === "paused") nextStep(m, i);
  return m;
};

export const canPause = (m: LifecycleModel, i: number) => m.contexts[i] !== undefined && !m.contexts[i]!.paused;
export const pause = (m0: LifecycleModel, i: number): LifecycleModel => {
  const m = clone(m0);
  ctx(m, i).paused = true;
  return m;
};

export const canResume = (m: LifecycleModel, i: number) => m.contexts[i]?.paused === true;
export const resume = (m0: LifecycleModel, i: number): LifecycleModel => {
  const m = clone(m0);
  const c = ctx(m, i);
  c.paused = false;
  if (c.wait === "paused") nextStep(m, i);
  return m;
};

export const canStop = (m: LifecycleModel, i: number) => m.contexts[i]?.status === "running";
export const stop = (m0: LifecycleModel, i: number): LifecycleModel => {
  const m = clone(m0);
  const superior = ctx(m, i).superior;
  stopCascade(m, i);
  if (superior !== null && ctx(m, superior).waitingOn === i) nextStep(m, superior);
  return m;
};

/** The model calls a tool that needs approval: the run parks until a decision. */
export const askApproval = (m0: LifecycleModel, i: number): LifecycleModel => {
  const m = clone(m0);
  const c = ctx(m, i);
  c.wait = "approval";
  c.attempt = 0;
  return m;
};

export const isParked = (m: LifecycleModel, i: number) => m.contexts[i]?.wait === "approval";

/** A grant or a denial of the parked call: the run takes its next step either way (the tool's result, or the reason). */
export const decide = (m0: LifecycleModel, i: number): LifecycleModel => {
  const m = clone(m0);
  nextStep(m, i);
  return m;
};

/** Every pending approval times out (denied): each parked run takes its next step. */
export const timeOut = (m0: LifecycleModel): LifecycleModel => {
  const m = clone(m0);
  for (const c of m.contexts) if (c.wait === "approval") nextStep(m, c.index);
  return m;
};

/** A model call is open: the commands below answer it. */
export const hasOpenCall = (m: LifecycleModel, i: number) => m.contexts[i]?.wait === "model";

/** The model gives a final answer: the run completes, unless an intervention waits (then it goes on). */
export const reply = (m0: LifecycleModel, i: number): LifecycleModel => {
  const m = clone(m0);
  if (ctx(m, i).undelivered > 0) nextStep(m, i);
  else endRun(m, i, "idle");
  return m;
};

/** The model call throws: a retryable error is retried (a new call opens) until the retries run out, then the run fails. */
export const failCall = (m0: LifecycleModel, i: number, retryable: boolean): LifecycleModel => {
  const m = clone(m0);
  const c = ctx(m, i);
  if (retryable && c.attempt <= m.modelRetries) {
    c.attempt += 1;
    c.undelivered = 0;
  } else endRun(m, i, "failed", "model_error");
  return m;
};

export const canDelegateById = (m: LifecycleModel, i: number, child: number) =>
  hasOpenCall(m, i) && child < (m.contexts[i]?.children.length ?? 0);

/** What a delegation does: which child it runs (maybe a new one), or why it was refused. */
export type DelegationOutcome =
  { kind: "run"; child: number; fresh: boolean } | { kind: "refused"; why: "depth" | "running" };

export const delegationOutcome = (m: LifecycleModel, i: number, mode: DelegateMode): DelegationOutcome => {
  const c = ctx(m, i);
  const existing =
    mode.kind === "byId" ? c.children[mode.child] : mode.kind === "default" ? c.children.at(-1) : undefined;
  if (existing === undefined) {
    if (c.depth + 1 > m.maxDepth) return { kind: "refused", why: "depth" };
    return { kind: "run", child: m.contexts.length, fresh: true };
  }
  if (ctx(m, existing).status === "running") return { kind: "refused", why: "running" };
  return { kind: "run", child: existing, fresh: false };
};

/** The model calls `call_subordinate`: a refusal is a repairable error (the next step); else the caller waits on the child's run. */
export const delegate = (m0: LifecycleModel, i: number, mode: DelegateMode): LifecycleModel => {
  const m = clone(m0);
  const outcome = delegationOutcome(m, i, mode);
  if (outcome.kind === "refused") {
    nextStep(m, i);
    return m;
  }
  const c = ctx(m, i);
  if (outcome.fresh) {
    m.contexts.push(newContext(outcome.child, i, c.number + 1));
    c.children.push(outcome.child);
  }
  c.wait = "child";
  c.waitingOn = outcome.child;
  startRun(m, outcome.child, i);
  return m;
};

/** The runtime is closed and reopened (or crashes and is reopened): every run still going ends as failed (interrupted). */
export const restart = (m0: LifecycleModel): LifecycleModel => {
  const m = clone(m0);
  for (const c of m.contexts) {
    // A user's parked run is not cut short: it waits on the log for its decision.
    if (c.status !== "running" || (c.wait === "approval" && c.superior === null)) continue;
    Object.assign(c, {
      status: "failed",
      wait: null,
      waitingOn: null,
      superior: null,
      undelivered: 0,
      attempt: 0,
      failure: "interrupted",
    });
  }
  return m;
};

/** Contexts whose model call should be open now. */
export const openCalls = (m: LifecycleModel): number[] =>
  m.contexts.filter((c) => c.wait === "model").map((c) => c.index);

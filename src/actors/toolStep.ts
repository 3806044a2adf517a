// The tool calls of one reply: each recorded (ToolCalled before its effect, ToolReturned / ToolFailed after), run
// through the tools' one path (callTool), skipped when a message or the `response` tool ends the turn first.
//
// Requirements:
// - ToolCalled is on the log before a tool can have any effect (or goes with the tool's own first append).
// - Bad arguments, unknown tools and thrown tool errors reach the model as the tool's result; a fatal one fails the run.
// - A call that needs approval is requested at once (ApprovalRequested), the reply's other calls go on, then the
//   run parks (`handle.parked`).
// - Between calls, a checkpoint: a pause waits, an intervention skips the remaining calls so the model sees it now.
import * as Effect from "effect/Effect";
import type { DomainEvent } from "../events/schema.ts";
import { recordsCallOf, type ToolOutcome } from "../tools/defineTool.ts";
import { callTool } from "../tools/toolCall.ts";
import type { Decision } from "./approvalGate.ts";
import { asLogError } from "./loopErrors.ts";
import type { ResumePlan } from "./resumePlan.ts";
import { type NormalizedCall } from "./replies.ts";
import { append, fail, type LoopEnv, stage, type Terminal, tryComplete, waitWhilePaused } from "./loopEnv.ts";

const SKIPPED_FOR_MESSAGE = "Not run: a new message arrived before this tool call; read it and decide again.";
const SKIPPED_AFTER_RESPONSE = "Not run: the `response` tool ended the turn before this tool call.";
export const SKIPPED_REPEATED = "Not run: this reply repeats the previous one.";

type ToolStepResult = { outcome: ToolOutcome } | { failed: string } | { parked: true } | Terminal;

/** `resumed`: the call is on the log as started, with no result (a restart cut it off). The path is the tools' (callTool); this records it. */
const runTool = (env: LoopEnv, step: number, call: NormalizedCall, decision: Decision | undefined, resumed = false) =>
  Effect.gen(function* () {
    const { runId } = env.handle;
    const calledEvent: DomainEvent = {
      type: "ToolCalled",
      data: { runId, step, toolCallId: call.id, name: call.name, arguments: call.arguments },
    };
    let called = resumed;
    const result = yield* Effect.tryPromise({
      try: (signal) =>
        callTool(
          {
            tools: env.tools,
            resolveReference: env.resolveReference,
            approvals: env.approvals,
            context: (sig) => env.toolContext(call.id, sig, step),
            signal,
          },
          call,
          {
            decision,
            cutOff: resumed,
            // A call that started was past its approval (or needed none).
            pastApproval: resumed,
            starting: async (tool, input) => {
              // The call is on the log before the tool can have any effect: appended now, or with the tool's own first append.
              if (!called)
                env.writer.stage([calledEvent], { correlationId: env.handle.correlationId, causationId: runId });
              called = true;
              if (!recordsCallOf(tool, input))
                await env.writer.append([], { correlationId: env.handle.correlationId, causationId: runId });
              env.handle.inFlight = { kind: "tool", toolCallId: call.id, name: call.name };
            },
          },
        ),
      catch: asLogError,
    });
    // Not on interruption: a stop records the call it cut off from `inFlight`.
    env.handle.inFlight = null;
    if (result.kind === "needs_approval") {
      // Asked on the log at once (with what the run staged): a person may decide while the other calls run.
      const { approvalId, expiresAt } = env.approvals.request();
      const request = {
        approvalId,
        runId,
        step,
        toolCallId: call.id,
        tool: call.name,
        arguments: call.arguments,
        contextId: env.handle.contextId,
        agentNumber: env.agentNumber,
        expiresAt,
      };
      yield* append(env, [{ type: "ApprovalRequested", data: request as never }]);
      return { parked: true } as ToolStepResult;
    }
    if (!called) yield* stage(env, [calledEvent]);
    if (result.kind === "returned") {
      yield* stage(env, [
        { type: "ToolReturned", data: { runId, toolCallId: call.id, name: call.name, result: result.outcome.text } },
      ]);
      return { outcome: result.outcome } as ToolStepResult;
    }
    yield* stage(env, [
      {
        type: "ToolFailed",
        data: { runId, toolCallId: call.id, name: call.name, error: result.error, repairable: !result.fatal },
      },
    ]);
    if (result.fatal)
      return {
        terminal: yield* fail(env, "tool_error", `Tool '${call.name}' failed: ${result.error}`),
      } as ToolStepResult;
    return { failed: result.error } as ToolStepResult;
  });

export const skipCalls = (env: LoopEnv, calls: readonly NormalizedCall[], why: string) =>
  calls.length === 0
    ? Effect.void
    : stage(
        env,
        calls.map((c) => ({
          type: "ToolFailed" as const,
          data: { runId: env.handle.runId, toolCallId: c.id, name: c.name, error: why, repairable: true },
        })),
      ).pipe(Effect.asVoid);

export const NO_DECISIONS: ReadonlyMap<string, Decision> = new Map();
export const NONE: ReadonlySet<string> = new Set();

/**
 * The calls of one reply, in order. Returns the run's end (or, when some call waits for approval, the facts
 * it parked with, `handle.parked` set), or null to go on with the next step.
 */
export const runCalls = (
  env: LoopEnv,
  step: number,
  calls: readonly NormalizedCall[],
  decisions: ReadonlyMap<string, Decision>,
  resuming: Pick<ResumePlan, "answered" | "started"> | null = null,
) =>
  Effect.gen(function* () {
    let parked = false;
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i]!;
      // A resumed step: what is on the log stands; a call cut off by a restart passed its checkpoint before it started.
      if (resuming?.answered.has(call.id)) continue;
      const resumed = resuming?.started.has(call.id) === true;
      if (i > 0 && !resumed) {
        yield* waitWhilePaused(env);
        if (env.interventionPending()) {
          yield* skipCalls(env, calls.slice(i), SKIPPED_FOR_MESSAGE);
          break;
        }
      }
      const r = yield* runTool(env, step, call, decisions.get(call.id), resumed);
      if ("terminal" in r) return r;
      if ("parked" in r) {
        parked = true;
        continue;
      }
      if ("outcome" in r && r.outcome.kind === "response") {
        yield* skipCalls(env, calls.slice(i + 1), SKIPPED_AFTER_RESPONSE);
        const done = yield* tryComplete(env, r.outcome.text);
        if (done) return { terminal: done };
        break;
      }
    }
    if (!parked) return null;
    env.handle.parked = true;
    return { terminal: yield* append(env, []) };
  });

// The fresh subordinates a run's SubordinateCalled names whose own stream never opened: a crash came between
// the caller's SubordinateCalled and the child's first append (which carries its ContextCreated).
//
// Requirements:
// - Only fresh children count (a continued child's stream existed before the call), and only those whose
//   stream is empty; a child that returned to the caller had a run, so its stream is not even read.
// - Each is rebuilt as rule 6 made it when the call ran (`freshChildData`): the same arguments (a `parallel`
//   job's from its ParallelJobStarted, a direct call's from its ToolCalled), references expanded as the
//   tool saw them, and the caller's view.
import type { DataOf, RecordedEvent } from "../events/schema.ts";
import { asContextId } from "../events/ids.ts";
import type { ContextView } from "../projections/contexts.ts";
import { CallSubordinateInput, DEFAULT_SLOT, freshChildData } from "./callSubordinate.ts";
import type { Delegator } from "./delegator.ts";
import { parseToolArguments } from "./arguments.ts";

/** The ContextCreated of each fresh child run `runId` of `caller` named but never recorded, in call order. */
export const unopenedChildren = async (
  rt: Pick<Delegator, "configuredPresetOf" | "profiles">,
  caller: ContextView,
  stream: readonly RecordedEvent[],
  runId: string,
  isEmpty: (contextId: string) => Promise<boolean>,
): Promise<DataOf<"ContextCreated">[]> => {
  const stored = new Map<string, string>();
  const returned = new Set<string>(); // this run's tool calls whose child answered
  for (const e of stream) {
    if (e.type !== "SubordinateReturned") continue;
    if (e.data.result !== null) stored.set(e.data.toolCallId, e.data.result);
    if (e.data.runId === runId) returned.add(e.data.toolCallId);
  }
  const out: DataOf<"ContextCreated">[] = [];
  for (const e of stream) {
    if (e.type !== "SubordinateCalled" || e.data.runId !== runId || !e.data.fresh) continue;
    const { toolCallId, jobId, childContextId } = e.data;
    if (returned.has(toolCallId)) continue;
    if (!(await isEmpty(childContextId))) continue;
    const call = stream.find((c) =>
      jobId !== null
        ? c.type === "ParallelJobStarted" && c.data.runId === runId && c.data.jobId === jobId
        : c.type === "ToolCalled" && c.data.runId === runId && c.data.toolCallId === toolCallId,
    );
    const raw = call?.type === "ParallelJobStarted" || call?.type === "ToolCalled" ? call.data.arguments : {};
    // Read as the call read them; arguments it could not read failed it before its SubordinateCalled.
    const parsed = parseToolArguments({ name: "call_subordinate", input: CallSubordinateInput }, raw, (id) =>
      stored.get(id),
    );
    const input = parsed.ok ? (parsed.value as CallSubordinateInput) : {};
    const message = typeof input.message === "string" ? input.message.trim() : "";
    out.push(freshChildData(rt, caller, input, message, jobId ?? DEFAULT_SLOT, asContextId(childContextId)));
  }
  return out;
};

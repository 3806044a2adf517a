// The fact that creates a root context (A0, profile "default"), for tests that write a log without a runtime.
import { asContextId } from "../../src/events/ids.ts";
import type { EventOf } from "../../src/events/schema.ts";

/** `ContextCreated` of root `id` named A0; `name` and `label` as given (default "A0"). */
export const rootCreated = (id: string, name = "A0"): EventOf<"ContextCreated"> => ({
  type: "ContextCreated",
  data: {
    contextId: asContextId(id),
    name,
    label: name,
    profile: "default",
    project: null,
    agentNumber: 0,
    depth: 0,
    kind: "root",
    parentContextId: null,
    parentAgentNumber: null,
    rootContextId: asContextId(id),
    slot: null,
    modelOverride: null,
  },
});

// The offline demo's tree, recorded once per test file: the runtime, its root, and every request the model was sent.
import { createRuntime, type ModelPort, type ModelRequest, type Runtime } from "../../src/index.ts";
import { DEMO_MODEL_NAME, demoModel } from "../../src/cli/demoModel.ts";
import { DEMO_TASK } from "../../src/cli/commands/run.ts";
import type { EventStore } from "../../src/events/store.ts";

export type RecordedDemo = {
  rt: Runtime;
  rootId: string;
  response: string | null;
  sent: Omit<ModelRequest, "signal">[];
};

/** Runs the demo task with the demo model (no latency) and keeps each request as the model port got it. */
export const recordDemo = async (store: EventStore, options: { promptsDir?: string } = {}): Promise<RecordedDemo> => {
  const demo = demoModel({ latencyMs: 0 });
  const sent: Omit<ModelRequest, "signal">[] = [];
  const model: ModelPort = {
    call: (request) => {
      const { signal: _signal, onDelta: _onDelta, ...rest } = request;
      sent.push(structuredClone(rest));
      return demo.call(request);
    },
  };
  const rt = await createRuntime({ store, model, presets: { Default: { model: DEMO_MODEL_NAME } }, ...options });
  const root = await rt.createContext({ name: "planner" });
  const { response } = await rt.send(root.id, DEMO_TASK);
  return { rt, rootId: root.id, response, sent };
};

import { afterAll, describe, expect, it } from "vitest";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { scriptedModel } from "../../src/models/scripted.ts";
import type { ModelRequest } from "../../src/models/port.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await removeDir(d);
});

/** A model whose replies depend only on the request, so two runtimes given the same history answer alike. */
const deterministic = () =>
  scriptedModel((req: ModelRequest) => {
    const last = req.messages.at(-1)!;
    if (req.agentNumber === 0 && last.role === "user" && last.content.startsWith("delegate")) {
      return {
        toolCalls: [
          {
            id: `call-${req.messages.length}`,
            name: "call_subordinate",
            arguments: JSON.stringify({ message: last.content.slice(9), profile: "researcher", name: "helper" }),
          },
        ],
      };
    }
    if (last.role === "tool")
      return { text: `composed: ${last.content.split("\n")[0]}`, usage: { inputTokens: 5, outputTokens: 2 } };
    return { text: `answer #${req.messages.length} to ${last.role}`, usage: { inputTokens: 3, outputTokens: 1 } };
  });

describe("when a file-backed store is closed and reopened", () => {
  it("restores every context, and the next model request is identical to the one without the restart", async () => {
    const dataDir = await copyPgliteTemplate();
    dirs.push(dataDir);

    // Given a tree of contexts with names, profiles, projects, overrides and mixed statuses.
    const store1 = await openPgliteStore({ dataDir });
    const rt1 = await createRuntime({ store: store1, model: deterministic(), projects: { alpha: {} } });
    const root = await rt1.createContext({
      name: "auditor",
      project: "alpha",
      modelOverride: { model: "gpt-test", baseURL: "http://127.0.0.1:1/v1" },
    });
    await rt1.send(root.id, "delegate look into the numbers");
    const other = await rt1.createContext({
      name: "second",
      profile: "developer",
      modelOverride: { preset: "Default" },
    });
    await rt1.send(other.id, "plain question");
    const before = await rt1.contexts();
    const historyBefore = await rt1.history(root.id);
    await rt1.close();
    await store1.close();

    // When it is reopened by a new runtime.
    const store2 = await openPgliteStore({ dataDir });
    const rt2 = await createRuntime({ store: store2, model: deterministic() });

    // Then every context field is equal.
    const after = await rt2.contexts();
    expect(after).toHaveLength(3);
    const pick = (c: (typeof after)[number]) => ({
      id: c.id,
      name: c.name,
      label: c.label,
      profile: c.profile,
      project: c.project,
      modelOverride: c.modelOverride,
      status: c.status,
      agentNumber: c.agentNumber,
      parentContextId: c.parentContextId,
      lastRun: c.lastRun,
    });
    expect(after.map(pick)).toEqual(before.map(pick));
    expect(after.find((c) => c.agentNumber === 1)).toMatchObject({
      name: "helper",
      profile: "researcher",
      project: "alpha",
    });
    expect(await rt2.history(root.id)).toEqual(historyBefore);

    // And the transcript sent for the next message is what a runtime that never restarted would send.
    const modelAfterRestart = deterministic();
    const rt3 = await createRuntime({ store: store2, model: modelAfterRestart });
    await rt2.close();
    await rt3.send(root.id, "one more");
    const sent = modelAfterRestart.requests[0]!;
    expect(sent.messages.slice(1)).toEqual([...historyBefore, { role: "user", content: "one more" }]);
    expect(sent.model).toBe("gpt-test");
    expect(sent.baseURL).toBe("http://127.0.0.1:1/v1");
    await rt3.close();
    await store2.close();
  });
});

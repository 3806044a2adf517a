// DESIGN §5 through the public API: numbering, fresh vs continued children, refusals, naming, long results, guards.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineTool, type EventStore, type ModelRequest, type Runtime } from "../../src/index.ts";
import { gate } from "../support/async.ts";
import {
  call,
  contextIdIn,
  delegationFile,
  eventsOf,
  footer,
  isFirstStep,
  last,
  refused,
  repliesSoFar,
  runtimeWith,
  toolResults,
  userMessages,
  type Handler,
} from "./support.ts";

let store: EventStore;
delegationFile((s) => (store = s));

/** A0 makes the calls in `script` one per step, then answers "done"; every child answers "ok: <its message>". */
const a0Script =
  (
    script: ((req: ModelRequest) => ReturnType<typeof call>)[],
    child: Handler = (req) => ({ text: `ok: ${last(req).content}` }),
  ): Handler =>
  (req) => {
    if (req.agentNumber > 0) return child(req);
    const step = script[repliesSoFar(req)];
    return step ? step(req) : { text: "done" };
  };

const requestsOf = (requests: readonly ModelRequest[], contextId: string) =>
  requests.filter((r) => r.contextId === contextId);

describe("when A0 delegates and its child delegates again", () => {
  it("creates A1 under A0 and A2 under A1, numbered, linked to their parents and to the root", async () => {
    const { rt, model } = await runtimeWith(store, (req) => {
      if (req.agentNumber === 0)
        return isFirstStep(req)
          ? call("call_subordinate", { message: "plan the trip" })
          : { text: `A0 got: ${last(req).content}` };
      if (req.agentNumber === 1)
        return isFirstStep(req) ? call("call_subordinate", { message: "book the train" }) : { text: "A1 done" };
      return { text: "A2 booked it" };
    });
    const root = await rt.createContext({ name: "boss" });
    const result = await rt.send(root.id, "organise a trip");

    const [a1, ...moreA1] = await rt.children(root.id);
    const [a2, ...moreA2] = await rt.children(a1!.id);
    expect(moreA1).toEqual([]);
    expect(moreA2).toEqual([]);
    expect(root).toMatchObject({
      agentNumber: 0,
      depth: 0,
      parentContextId: null,
      rootContextId: root.id,
      kind: "root",
    });
    expect(a1).toMatchObject({
      agentNumber: 1,
      depth: 1,
      parentContextId: root.id,
      parentAgentNumber: 0,
      rootContextId: root.id,
      kind: "subordinate",
      slot: "default",
      status: "idle",
    });
    expect(a2).toMatchObject({
      agentNumber: 2,
      depth: 2,
      parentContextId: a1!.id,
      parentAgentNumber: 1,
      rootContextId: root.id,
      kind: "subordinate",
      slot: "default",
      status: "idle",
    });
    expect(await rt.children(a2!.id)).toEqual([]);

    // Each level's model is asked as its own agent, with the assignment as its message, and sees the result below it.
    expect(model.requests.map((r) => [r.agentNumber, r.contextId])).toEqual([
      [0, root.id],
      [1, a1!.id],
      [2, a2!.id],
      [1, a1!.id],
      [0, root.id],
    ]);
    expect(last(model.requests[1]!)).toEqual({ role: "user", content: "plan the trip" });
    expect(last(model.requests[2]!)).toEqual({ role: "user", content: "book the train" });
    expect(last(model.requests[3]!).content).toBe(`A2 booked it${footer(2, a2!.id)}`);
    expect(result).toMatchObject({ status: "completed", response: `A0 got: A1 done${footer(1, a1!.id)}` });
  });

  it("records the child's run in the child's own stream, from its message to its end, and the call and its return in the caller's", async () => {
    const { rt } = await runtimeWith(
      store,
      a0Script([() => call("call_subordinate", { message: "count to three" }, "c_count")]),
    );
    const root = await rt.createContext();
    await rt.send(root.id, "go");
    const [a1] = await rt.children(root.id);
    const runs = await eventsOf(rt, root.id, "RunStarted");

    expect((await rt.events({ contextId: a1!.id })).map((e) => e.type)).toEqual([
      "ContextCreated",
      "MessageReceived",
      "RunStarted",
      "ModelCalled",
      "ModelReplied",
      "RunCompleted",
    ]);
    const [childStart] = await eventsOf(rt, a1!.id, "RunStarted");
    expect(childStart!.data.superior).toEqual({
      contextId: root.id,
      runId: runs[0]!.data.runId,
      toolCallId: "c_count",
      jobId: null,
    });
    expect((await eventsOf(rt, root.id, "SubordinateCalled")).map((e) => e.data)).toEqual([
      { runId: runs[0]!.data.runId, toolCallId: "c_count", childContextId: a1!.id, fresh: true, jobId: null },
    ]);
    expect((await eventsOf(rt, root.id, "SubordinateReturned")).map((e) => e.data)).toEqual([
      {
        runId: runs[0]!.data.runId,
        toolCallId: "c_count",
        childContextId: a1!.id,
        outcome: "completed",
        result: "ok: count to three",
        reason: null,
      },
    ]);
  });
});

describe("when A0 creates two children and each delegates", () => {
  it("gives each A1 its own A2", async () => {
    const { rt } = await runtimeWith(
      store,
      a0Script(
        [
          () => call("call_subordinate", { message: "north", reset: true }),
          () => call("call_subordinate", { message: "south", reset: true }),
        ],
        (req) => {
          if (req.agentNumber === 1)
            return isFirstStep(req)
              ? call("call_subordinate", { message: `survey the ${last(req).content}` })
              : { text: "surveyed" };
          return { text: `A2: ${last(req).content}` };
        },
      ),
    );
    const root = await rt.createContext();
    await rt.send(root.id, "survey both halves");

    const a1s = await rt.children(root.id);
    expect(a1s.map((c) => [c.name, c.agentNumber])).toEqual([
      ["north", 1],
      ["south", 1],
    ]);
    const grandchildren = await Promise.all(a1s.map((c) => rt.children(c.id)));
    expect(grandchildren.map((g) => g.map((c) => [c.name, c.agentNumber, c.parentContextId]))).toEqual([
      [["survey the north", 2, a1s[0]!.id]],
      [["survey the south", 2, a1s[1]!.id]],
    ]);
    expect(new Set([root.id, ...a1s.map((c) => c.id), ...grandchildren.flat().map((c) => c.id)]).size).toBe(5);
  });
});

describe("when the caller sets reset", () => {
  it.each([
    [true, "fresh"],
    ["true", "fresh"],
    [" TRUE ", "fresh"],
    ["yes", "continued"],
    [1, "continued"],
    ["", "continued"],
    [false, "continued"],
  ] as const)("reset=%j makes the second call a %s child", async (reset, expected) => {
    const { rt, model } = await runtimeWith(
      store,
      a0Script([
        () => call("call_subordinate", { message: "first" }),
        () => call("call_subordinate", { message: "second", reset }),
      ]),
    );
    const root = await rt.createContext();
    await rt.send(root.id, "go");

    const children = await rt.children(root.id);
    const fresh = (await eventsOf(rt, root.id, "SubordinateCalled")).map((e) => e.data.fresh);
    if (expected === "fresh") {
      expect(children.map((c) => c.name)).toEqual(["first", "second"]);
      expect(fresh).toEqual([true, true]);
      expect(userMessages(requestsOf(model.requests, children[1]!.id).at(-1)!)).toEqual(["second"]);
    } else {
      expect(children.map((c) => c.name)).toEqual(["first"]);
      expect(fresh).toEqual([true, false]);
      expect(userMessages(requestsOf(model.requests, children[0]!.id).at(-1)!)).toEqual(["first", "second"]);
    }
  });
});

describe("when the caller continues by context_id", () => {
  it.each(["context_id", "agent_id"])("continues exactly the child named by `%s`, with its history", async (key) => {
    const { rt, model } = await runtimeWith(
      store,
      a0Script([
        () => call("call_subordinate", { message: "first", reset: true }),
        () => call("call_subordinate", { message: "second", reset: true }),
        (req) => call("call_subordinate", { [key]: contextIdIn(toolResults(req)[0]!), message: "third" }),
      ]),
    );
    const root = await rt.createContext();
    const result = await rt.send(root.id, "go");

    const [first, second, ...more] = await rt.children(root.id);
    expect(more).toEqual([]);
    expect(userMessages(requestsOf(model.requests, first!.id).at(-1)!)).toEqual(["first", "third"]);
    expect(userMessages(requestsOf(model.requests, second!.id).at(-1)!)).toEqual(["second"]);
    expect(
      (await eventsOf(rt, root.id, "SubordinateCalled")).map((e) => [e.data.childContextId, e.data.fresh]),
    ).toEqual([
      [first!.id, true],
      [second!.id, true],
      [first!.id, false],
    ]);
    expect(toolResults(model.requests.at(-1)!).at(-1)).toBe(`ok: third${footer(1, first!.id)}`);
    expect(result.status).toBe("completed");
  });
});

describe("when the caller continues without context_id", () => {
  it("continues its newest child in the default slot", async () => {
    const { rt, model } = await runtimeWith(
      store,
      a0Script([
        () => call("call_subordinate", { message: "first", reset: true }),
        () => call("call_subordinate", { message: "second", reset: true }),
        () => call("call_subordinate", { message: "third" }),
      ]),
    );
    const root = await rt.createContext();
    await rt.send(root.id, "go");

    const [first, second, ...more] = await rt.children(root.id);
    expect(more).toEqual([]);
    expect(userMessages(requestsOf(model.requests, second!.id).at(-1)!)).toEqual(["second", "third"]);
    expect(userMessages(requestsOf(model.requests, first!.id).at(-1)!)).toEqual(["first"]);
  });

  it("creates a fresh child when it has none", async () => {
    const { rt } = await runtimeWith(store, a0Script([() => call("call_subordinate", { message: "only one" })]));
    const root = await rt.createContext();
    await rt.send(root.id, "go");
    expect((await rt.children(root.id)).map((c) => c.name)).toEqual(["only one"]);
    expect((await eventsOf(rt, root.id, "SubordinateCalled")).map((e) => e.data.fresh)).toEqual([true]);
  });

  it("continues its child across runs of the caller", async () => {
    const { rt, model } = await runtimeWith(store, (req) =>
      req.agentNumber > 0
        ? { text: "ok" }
        : isFirstStep(req)
          ? call("call_subordinate", { message: `about ${last(req).content}` })
          : { text: "done" },
    );
    const root = await rt.createContext();
    await rt.send(root.id, "monday");
    await rt.send(root.id, "tuesday");
    const [child, ...more] = await rt.children(root.id);
    expect(more).toEqual([]);
    expect(userMessages(requestsOf(model.requests, child!.id).at(-1)!)).toEqual(["about monday", "about tuesday"]);
  });
});

/** Runs A0 once with one refused call and returns what its model saw as that call's result. */
const refusalSeen = async (rt: Runtime, rootId: string, toolCallId: string, model: { requests: ModelRequest[] }) => {
  await rt.send(rootId, `refuse ${toolCallId}`);
  const req = model.requests.filter((r) => r.contextId === rootId).at(-1)!;
  const msg = req.messages.find((m) => m.role === "tool" && m.tool_call_id === toolCallId);
  const failed = (await eventsOf(rt, rootId, "ToolFailed")).find((e) => e.data.toolCallId === toolCallId);
  const called = (await eventsOf(rt, rootId, "SubordinateCalled")).filter((e) => e.data.toolCallId === toolCallId);
  expect(called).toEqual([]);
  expect(failed?.data.repairable).toBe(true);
  return msg?.content;
};

describe("when the call is refused", () => {
  // A0's model makes the refused call named by the run's message, then answers; children it creates answer at once.
  const setup = async (argsFor: Record<string, unknown>, extra: Parameters<typeof runtimeWith>[2] = {}) => {
    const { rt, model } = await runtimeWith(
      store,
      (req) => {
        if (req.agentNumber > 0) return { text: "ok" };
        if (!isFirstStep(req)) return { text: "noted" };
        const text = last(req).content as string;
        const key = text.replace(/^refuse /, "");
        return call("call_subordinate", argsFor[key] ?? { message: text }, key);
      },
      extra,
    );
    return { rt, model };
  };

  it.each([
    ["an empty message", { message: "   " }],
    ["a missing message", { name: "nobody" }],
    ["a message that is not a string", { message: 42 }],
  ])("refuses %s before anything is created", async (_what, args) => {
    const { rt, model } = await setup({ c_empty: args });
    const root = await rt.createContext();
    expect(await refusalSeen(rt, root.id, "c_empty", model)).toBe(
      refused("call_subordinate", "call_subordinate requires a non-empty `message`."),
    );
    expect(await rt.children(root.id)).toEqual([]);
    expect(await rt.contexts({ rootContextId: root.id })).toHaveLength(1);
  });

  it("refuses an unknown profile, listing the available ones sorted with their titles", async () => {
    const { rt, model } = await setup({
      c_prof: { message: "fly", profile: "astronaut" },
      c_alias: { message: "fly", agent_profile: "astronaut" },
    });
    const root = await rt.createContext();
    const expected = refused(
      "call_subordinate",
      "Agent profile 'astronaut' not found. Use one of the available profiles: default (Default), developer (Developer), researcher (Researcher).",
    );
    expect(await refusalSeen(rt, root.id, "c_prof", model)).toBe(expected);
    expect(await refusalSeen(rt, root.id, "c_alias", model)).toBe(expected);
    expect(await rt.contexts({ rootContextId: root.id })).toHaveLength(1);
  });

  it("counts a profile the project disables, or that is disabled itself, as unknown, and names a title only when it differs from the key", async () => {
    const dir = mkdtempSync(join(tmpdir(), "actorzero-profiles-"));
    try {
      const profile = (key: string, json: unknown) => {
        mkdirSync(join(dir, key));
        writeFileSync(join(dir, key, "profile.json"), JSON.stringify(json));
      };
      profile("tester", { title: "tester" });
      profile("retired", { title: "Retired", enabled: false });
      const { rt, model } = await setup(
        { c_disabled: { message: "dig", profile: "researcher" }, c_retired: { message: "dig", profile: "retired" } },
        { profiles: [dir], projects: { acme: { disabledProfiles: ["researcher"] } } },
      );
      const root = await rt.createContext({ project: "acme" });
      const available = "default (Default), developer (Developer), tester";
      expect(await refusalSeen(rt, root.id, "c_disabled", model)).toBe(
        refused(
          "call_subordinate",
          `Agent profile 'researcher' not found. Use one of the available profiles: ${available}.`,
        ),
      );
      expect(await refusalSeen(rt, root.id, "c_retired", model)).toBe(
        refused(
          "call_subordinate",
          `Agent profile 'retired' not found. Use one of the available profiles: ${available}.`,
        ),
      );
      expect(await rt.contexts({ rootContextId: root.id })).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses context_id together with reset=true", async () => {
    let childId = "";
    const { rt, model } = await setup({
      get c_both() {
        return { message: "again", context_id: childId, reset: "true" };
      },
    });
    const root = await rt.createContext();
    await rt.send(root.id, "make a child");
    childId = (await rt.children(root.id))[0]!.id;
    expect(await refusalSeen(rt, root.id, "c_both", model)).toBe(
      refused(
        "call_subordinate",
        "`context_id` continues an existing subordinate and requires reset=false. Omit `context_id` to create a fresh subordinate.",
      ),
    );
    expect(await rt.contexts({ rootContextId: root.id })).toHaveLength(2);
    expect(requestsOf(model.requests, childId)).toHaveLength(1);
  });

  it("refuses a context_id that is not the caller's own child: a grandchild, a sibling's child, an unknown id", async () => {
    // A0 → A1 "left" → A2, and A1 "right"; then A0 names the grandchild, and "right" names left's child.
    let a2 = "";
    let rightId = "";
    const { rt, model } = await runtimeWith(store, (req) => {
      const text = userMessages(req).at(-1)!;
      if (req.agentNumber === 2) return { text: "leaf" };
      if (req.agentNumber === 1) {
        if (!isFirstStep(req)) return { text: "A1 done" };
        if (text === "left") return call("call_subordinate", { message: "leaf work" });
        if (text === "poach") return call("call_subordinate", { message: "steal", context_id: a2 }, "c_poach");
        return { text: "right here" };
      }
      if (!isFirstStep(req)) {
        const n = req.messages.filter((m) => m.role === "tool").length;
        return text === "build" && n === 1
          ? call("call_subordinate", { message: "right", reset: true })
          : { text: "A0 done" };
      }
      if (text === "build") return call("call_subordinate", { message: "left", reset: true });
      if (text === "grandchild")
        return call("call_subordinate", { message: "skip a level", context_id: a2 }, "c_grand");
      if (text === "unknown")
        return call(
          "call_subordinate",
          { message: "who", context_id: "00000000-0000-4000-8000-000000000000" },
          "c_unknown",
        );
      if (text === "sibling") return call("call_subordinate", { message: "poach", context_id: rightId }, "c_sibling");
      return { text: "?" };
    });
    const root = await rt.createContext();
    await rt.send(root.id, "build");
    const [left, right] = await rt.children(root.id);
    rightId = right!.id;
    a2 = (await rt.children(left!.id))[0]!.id;
    const before = (await rt.contexts({ rootContextId: root.id })).length;
    expect(before).toBe(4);

    await rt.send(root.id, "grandchild");
    const seenBy = (id: string, toolCallId: string) =>
      model.requests
        .filter((r) => r.contextId === id)
        .at(-1)!
        .messages.find((m) => m.role === "tool" && m.tool_call_id === toolCallId)?.content;
    expect(seenBy(root.id, "c_grand")).toBe(
      refused("call_subordinate", `Subordinate context '${a2}' was not found under A0.`),
    );

    await rt.send(root.id, "unknown");
    expect(seenBy(root.id, "c_unknown")).toBe(
      refused("call_subordinate", "Subordinate context '00000000-0000-4000-8000-000000000000' was not found under A0."),
    );

    await rt.send(root.id, "sibling");
    expect(seenBy(rightId, "c_poach")).toBe(
      refused("call_subordinate", `Subordinate context '${a2}' was not found under A1.`),
    );

    expect(await rt.contexts({ rootContextId: root.id })).toHaveLength(before);
    expect(requestsOf(model.requests, a2)).toHaveLength(1);
    expect(await eventsOf(rt, rightId, "SubordinateCalled")).toEqual([]);
  });

  it("refuses a profile change on continuation, by context_id or by slot", async () => {
    let childId = "";
    const { rt, model } = await setup({
      c_make: { message: "code it", profile: "developer" },
      c_same: { message: "more code", profile: "developer" },
      get c_byid() {
        return { message: "research", context_id: childId, profile: "researcher" };
      },
      c_byslot: { message: "research", profile: "researcher" },
    });
    const root = await rt.createContext();
    await rt.send(root.id, "refuse c_make");
    childId = (await rt.children(root.id))[0]!.id;
    expect(await rt.context(childId)).toMatchObject({ profile: "developer" });
    const expected = refused(
      "call_subordinate",
      "Subordinate already uses profile 'developer'. Set reset=true and omit `context_id` to switch to 'researcher'.",
    );
    expect(await refusalSeen(rt, root.id, "c_byid", model)).toBe(expected);
    expect(await refusalSeen(rt, root.id, "c_byslot", model)).toBe(expected);
    // The same profile continues.
    await rt.send(root.id, "refuse c_same");
    expect(
      (await eventsOf(rt, root.id, "SubordinateCalled")).map((e) => [e.data.childContextId, e.data.fresh]),
    ).toEqual([
      [childId, true],
      [childId, false],
    ]);
    expect(await rt.children(root.id)).toHaveLength(1);
  });

  it("names the default profile when the child has it", async () => {
    const { rt, model } = await setup({ c_dev: { message: "now code", profile: "developer" } });
    const root = await rt.createContext();
    await rt.send(root.id, "plain child");
    expect(await refusalSeen(rt, root.id, "c_dev", model)).toBe(
      refused(
        "call_subordinate",
        "Subordinate already uses profile 'default'. Set reset=true and omit `context_id` to switch to 'developer'.",
      ),
    );
  });

  it("refuses to continue a child that is running", async () => {
    const held = gate();
    const busy = gate();
    let childId = "";
    const { rt, model } = await runtimeWith(store, async (req) => {
      if (req.agentNumber > 0) {
        if (last(req).content === "direct work") {
          busy.open();
          await held.promise;
        }
        return { text: "child answer" };
      }
      if (!isFirstStep(req)) return { text: "A0 done" };
      if (last(req).content === "make") return call("call_subordinate", { message: "make" });
      return call("call_subordinate", { message: "more", context_id: childId }, "c_busy");
    });
    const root = await rt.createContext();
    await rt.send(root.id, "make");
    childId = (await rt.children(root.id))[0]!.id;
    const direct = rt.send(childId, "direct work");
    await busy.promise;
    expect(await refusalSeen(rt, root.id, "c_busy", model)).toBe(
      refused(
        "call_subordinate",
        `Subordinate context '${childId}' is still running. Wait for it to finish or stop it before continuing it.`,
      ),
    );
    held.open();
    expect(await direct).toMatchObject({ status: "completed", response: "child answer" });
    expect(userMessages(requestsOf(model.requests, childId).at(-1)!)).toEqual(["make", "direct work"]);
  });
});

describe("when a child is named", () => {
  it("uses `name` for its name and label", async () => {
    const { rt } = await runtimeWith(
      store,
      a0Script([() => call("call_subordinate", { message: "look around", name: "  Scout  " })]),
    );
    const root = await rt.createContext({ name: "boss" });
    await rt.send(root.id, "go");
    expect((await rt.children(root.id))[0]).toMatchObject({ name: "Scout", label: "Scout" });
  });

  it("without `name`, uses the message's first 80 characters with whitespace collapsed", async () => {
    const message =
      "  Compare   the\tthree\n\nvendors offers for the new CRM system, then list the risks, costs and timelines of each  ";
    const { rt } = await runtimeWith(store, a0Script([() => call("call_subordinate", { message })]));
    const root = await rt.createContext();
    await rt.send(root.id, "go");
    const expected = "Compare the three vendors offers for the new CRM system, then list the risks, co";
    expect(expected).toHaveLength(80);
    expect((await rt.children(root.id))[0]).toMatchObject({ name: expected, label: expected });
  });

  it("renames on continuation with a non-empty name, keeps the name when it is omitted or blank, and never renames the caller", async () => {
    let childId = "";
    const script: Record<string, () => unknown> = {
      create: () => ({ message: "draft", name: "Drafter" }),
      rename: () => ({ message: "edit", context_id: childId, name: "Editor" }),
      omit: () => ({ message: "polish", context_id: childId }),
      blank: () => ({ message: "polish again", name: "   " }),
    };
    const { rt } = await runtimeWith(store, (req) => {
      if (req.agentNumber > 0) return { text: "ok" };
      return isFirstStep(req) ? call("call_subordinate", script[last(req).content as string]!()) : { text: "done" };
    });
    const root = await rt.createContext({ name: "boss" });
    await rt.send(root.id, "create");
    childId = (await rt.children(root.id))[0]!.id;
    expect(await rt.context(childId)).toMatchObject({ name: "Drafter", label: "Drafter" });

    await rt.send(root.id, "rename");
    expect(await rt.context(childId)).toMatchObject({ name: "Editor", label: "Editor" });
    await rt.send(root.id, "omit");
    await rt.send(root.id, "blank");
    expect(await rt.context(childId)).toMatchObject({ name: "Editor", label: "Editor" });
    expect((await eventsOf(rt, childId, "ContextRenamed")).map((e) => e.data)).toEqual([
      { name: "Editor", label: "Editor" },
    ]);

    expect(await rt.children(root.id)).toHaveLength(1);
    expect(await rt.context(root.id)).toMatchObject({ name: "boss", label: "boss" });
    expect(await eventsOf(rt, root.id, "ContextRenamed")).toEqual([]);
  });
});

describe("when the child's answer is long", () => {
  const hint = (toolCallId: string) =>
    `\nThis result is stored: to pass it on, write §§result(${toolCallId}) in a later tool argument instead of rewriting it.`;

  it("adds no hint below LEN_MIN (499 characters)", async () => {
    const answer = "x".repeat(499);
    const { rt, model } = await runtimeWith(
      store,
      a0Script([() => call("call_subordinate", { message: "write" }, "c_499")], () => ({ text: answer })),
    );
    const root = await rt.createContext();
    await rt.send(root.id, "go");
    const [child] = await rt.children(root.id);
    expect(toolResults(model.requests.at(-1)!)).toEqual([answer + footer(1, child!.id)]);
  });

  it("adds the hint at LEN_MIN (500 characters), and a later tool argument can pass the stored result by reference", async () => {
    const answer = "y".repeat(250) + "\n" + "z".repeat(249);
    expect(answer).toHaveLength(500);
    const received: string[] = [];
    const save = defineTool({
      name: "save",
      description: "saves a text",
      input: z.object({ text: z.string() }),
      run: ({ text }) => {
        received.push(text);
        return `saved ${text.length} characters`;
      },
    });
    const { rt, model } = await runtimeWith(
      store,
      a0Script(
        [
          () => call("call_subordinate", { message: "write" }, "c_500"),
          () => call("save", { text: "report: §§result(c_500)" }, "c_save"),
        ],
        () => ({
          text: answer,
        }),
      ),
      { tools: [save] },
    );
    const root = await rt.createContext();
    await rt.send(root.id, "go");
    const [child] = await rt.children(root.id);
    expect(toolResults(model.requests.at(-1)!)).toEqual([
      answer + footer(1, child!.id) + hint("c_500"),
      "saved 508 characters",
    ]);
    expect(received).toEqual([`report: ${answer}`]);
  });
});

describe("when a guard refuses", () => {
  it("refuses a child deeper than the maximum depth, and the caller's run goes on", async () => {
    const { rt, model } = await runtimeWith(
      store,
      (req) => {
        if (req.agentNumber === 0)
          return isFirstStep(req) ? call("call_subordinate", { message: "go deep" }) : { text: "A0 done" };
        return isFirstStep(req)
          ? call("call_subordinate", { message: "deeper" }, "c_deep")
          : { text: `A1 saw: ${last(req).content}` };
      },
      { limits: { maxDepth: 1 } },
    );
    const root = await rt.createContext();
    expect(await rt.send(root.id, "go")).toMatchObject({ status: "completed", response: "A0 done" });
    const [a1] = await rt.children(root.id);
    expect(await rt.children(a1!.id)).toEqual([]);
    expect(last(requestsOf(model.requests, a1!.id).at(-1)!).content).toBe(
      refused(
        "call_subordinate",
        "Cannot create A2: the maximum delegation depth is 1. Do this part yourself or give it back to your superior.",
      ),
    );
    expect((await eventsOf(rt, a1!.id, "ToolFailed")).map((e) => e.data.repairable)).toEqual([true]);
  });

  it("refuses another live child beyond the per-run maximum, and the caller's run goes on", async () => {
    const held = gate();
    const childRunning = gate();
    const { rt, model } = await runtimeWith(
      store,
      async (req) => {
        if (req.agentNumber > 0) {
          childRunning.open();
          await held.promise;
          return { text: "slow answer" };
        }
        switch (repliesSoFar(req)) {
          case 0:
            return call("parallel", {
              tool_calls: [{ name: "call_subordinate", arguments: { message: "slow" } }],
              wait: false,
            });
          case 1:
            await childRunning.promise;
            return call("call_subordinate", { message: "another", reset: true }, "c_extra");
          case 2:
            held.open();
            return call("parallel", { action: "await" });
          default:
            return { text: "A0 done" };
        }
      },
      { limits: { maxLiveChildrenPerRun: 1 } },
    );
    const root = await rt.createContext();
    expect(await rt.send(root.id, "go")).toMatchObject({ status: "completed", response: "A0 done" });
    const results = toolResults(model.requests.at(-1)!);
    expect(results[1]).toBe(
      refused(
        "call_subordinate",
        "Cannot start another subordinate: this run already has 1 running, the maximum. Wait for one to finish.",
      ),
    );
    expect(JSON.parse(results[2]!)).toMatchObject({ status: "success", jobs: [{ status: "success" }] });
    expect((await rt.children(root.id)).map((c) => c.name)).toEqual(["slow"]);
  });

  it("holds to the per-run maximum when jobs start their children at the same moment", async () => {
    // The child that got to run answers only once the other job has been refused, so both ran at once.
    const refusedJob = gate();
    const { rt, model } = await runtimeWith(
      store,
      a0Script(
        [
          () =>
            call("parallel", {
              tool_calls: [
                { name: "call_subordinate", arguments: { message: "one" } },
                { name: "call_subordinate", arguments: { message: "two" } },
              ],
            }),
        ],
        async (req) => {
          await refusedJob.promise;
          return { text: `ok: ${last(req).content}` };
        },
      ),
      { limits: { maxLiveChildrenPerRun: 1 } },
    );
    const unsubscribe = await rt.subscribe((e) => {
      if (e.type === "ParallelJobFinished" && e.data.status === "error") refusedJob.open();
    });
    const root = await rt.createContext();
    await rt.send(root.id, "go");
    const out = JSON.parse(toolResults(model.requests.at(-1)!)[0]!) as { jobs: { status: string; error?: string }[] };
    expect(out.jobs.map((j) => j.status).sort()).toEqual(["error", "success"]);
    expect(out.jobs.find((j) => j.status === "error")!.error).toBe(
      "Cannot start another subordinate: this run already has 1 running, the maximum. Wait for one to finish.",
    );
    expect(await rt.children(root.id)).toHaveLength(1);
    unsubscribe();
  });
});

import { describe, expect, it } from "vitest";
import { encodingFor, tokenCounterFor, UNKNOWN_MODEL_MARGIN } from "../../src/models/tokenCount.ts";

describe("token counts", () => {
  it("chooses the encoding by the model's name", () => {
    expect(encodingFor("gpt-4o-mini")).toBe("o200k_base");
    expect(encodingFor("openai/gpt-5")).toBe("o200k_base");
    expect(encodingFor("gpt-4-turbo")).toBe("cl100k_base");
    expect(encodingFor("gpt-3.5-turbo")).toBe("cl100k_base");
    expect(encodingFor("llama3.1:8b")).toBe("estimate");
  });

  it("counts text with the real tables: the two encodings differ, and unknown models get the margin", async () => {
    const o200k = await tokenCounterFor("gpt-4o");
    const cl100k = await tokenCounterFor("gpt-4");
    const unknown = await tokenCounterFor("mistral-small");
    const sample = "Résumé: the subordinate's answer — ünïcödé, code `const x = 1;` and 日本語のテキスト.";
    expect(o200k.text("hello world")).toBe(2);
    expect(cl100k.text(sample)).not.toBe(o200k.text(sample));
    expect(unknown.text(sample)).toBe(Math.ceil(o200k.text(sample) * (1 + UNKNOWN_MODEL_MARGIN)));
  });

  it("counts a request as its messages, tool calls, tools and the reply's priming", async () => {
    const counter = await tokenCounterFor("gpt-4o-mini");
    const messages = [
      { role: "system" as const, content: "You are A0." },
      { role: "user" as const, content: "Delegate the research." },
      {
        role: "assistant" as const,
        content: null,
        tool_calls: [
          {
            id: "c1",
            type: "function" as const,
            function: { name: "call_subordinate", arguments: '{"message":"go"}' },
          },
        ],
      },
      { role: "tool" as const, tool_call_id: "c1", content: "done" },
    ];
    const tools = [{ name: "call_subordinate", description: "Delegate.", parameters: { type: "object" } }];
    const bare = counter.request({ messages: [], tools: [] });
    const full = counter.request({ messages, tools });
    expect(full).toBe(bare + messages.reduce((sum, m) => sum + counter.message(m), 0) + counter.tools(tools));
    expect(counter.message(messages[2]!)).toBeGreaterThan(counter.message({ role: "assistant", content: null }));
    const longer = counter.request({ messages: [...messages, { role: "user", content: "x ".repeat(500) }], tools });
    expect(longer - full).toBeGreaterThanOrEqual(500);
  });
});

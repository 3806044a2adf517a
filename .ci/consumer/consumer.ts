// A strict TypeScript service that embeds actorzero: it must typecheck against the installed package alone.
import { createRuntime, openPgliteStore, openPostgresStore, defineTool, scriptedModel, type Runtime, type SendResult } from "actorzero";
import { assertInvariants } from "actorzero/testing";
import { z } from "zod";

const echo = defineTool({
  name: "echo",
  description: "Says the text back.",
  input: z.object({ text: z.string() }),
  run: ({ text }) => text,
});

export async function delegateOnce(url?: string): Promise<SendResult> {
  const store = url ? await openPostgresStore({ url }) : await openPgliteStore();
  const model = scriptedModel((request) =>
    request.messages.some((m) => m.role === "tool") ? { text: "done" } : { toolCalls: [{ name: "echo", arguments: '{"text":"hi"}' }] },
  );
  const rt: Runtime = await createRuntime({ store, model, tools: [echo] });
  const ctx = await rt.createContext({ name: "svc" });
  const result = await rt.send(ctx.id, "go");
  await assertInvariants(rt, { rootContextId: ctx.id });
  const [first] = await rt.children(ctx.id);
  if (first !== undefined) console.log(first.name);
  await rt.close();
  await store.close();
  return result;
}

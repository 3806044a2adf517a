// The model of the approval restart tests (shared by the test and its child process): deploy, then report its result.
import { scriptedModel } from "../../src/models/scripted.ts";

export const parkingModel = () =>
  scriptedModel((req) => {
    const last = req.messages.at(-1)!;
    if (last.role === "user")
      return { toolCalls: [{ id: "c_deploy", name: "deploy", arguments: JSON.stringify({ env: "prod" }) }] };
    return { text: `done: ${last.content as string}` };
  });

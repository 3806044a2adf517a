// fast-check commands over a real runtime: each runs on the reference model and on the runtime, then
// waits until they agree and checks every invariant (step.ts). Their `toString()` reads like a script.
import fc from "fast-check";
import type { Cmd } from "./step.ts";
import { Crash, Intervene, Pause, Restart, Resume, Send, Stop } from "./controlCommands.ts";
import { Delegate, FailModel, Reply } from "./modelCommands.ts";
import { AskApproval, Decide, TimeOut } from "./approvalCommands.ts";

export {
  Crash,
  Intervene,
  Pause,
  Restart,
  Resume,
  Send,
  Stop,
  Delegate,
  FailModel,
  Reply,
  AskApproval,
  Decide,
  TimeOut,
};
export type { DelegateMode } from "./modelCommands.ts";

const pick = fc.nat({ max: 7 });

/**
 * Every command of the lifecycle and delegation rules, weighted toward the model's answers (which move
 * runs along); restart and crash are rarer.
 */
export const lifecycleCommands = (): fc.Arbitrary<Cmd>[] => [
  pick.map((p) => new Send(p)),
  pick.map((p) => new Send(p)),
  pick.map((p) => new Intervene(p)),
  pick.map((p) => new Pause(p)),
  pick.map((p) => new Resume(p)),
  pick.map((p) => new Stop(p)),
  pick.map((p) => new Stop(p, "parent")),
  pick.map((p) => new Stop(p, "child")),
  pick.map((p) => new Reply(p)),
  pick.map((p) => new Reply(p)),
  pick.map((p) => new Reply(p)),
  pick.map((p) => new Delegate(p, { kind: "fresh" })),
  pick.map((p) => new Delegate(p, { kind: "fresh" })),
  pick.map((p) => new Delegate(p, { kind: "default" })),
  fc.tuple(pick, fc.nat({ max: 3 })).map(([p, k]) => new Delegate(p, { kind: "byId", child: k })),
  fc.tuple(pick, fc.boolean()).map(([p, r]) => new FailModel(p, r)),
  pick.map((p) => new AskApproval(p)),
  fc.tuple(pick, fc.boolean()).map(([p, g]) => new Decide(p, g)),
  fc.constant(null).map(() => new TimeOut()),
  fc.constant(null).map(() => new Restart()),
  fc.constant(null).map(() => new Crash()),
];

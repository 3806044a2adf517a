// The budget of a delegation tree over HTTP: read it, and extend it so the runs parked on it go on.
//
// Requirements:
// - Either route takes any context of the tree and answers for the tree's root: `{ rootContextId, limits, spent,
//   reserved, parked }`, as `rt.budget` reports it (spent and reserved with `totalTokens`).
// - An extension is checked whole before anything is written (a strict object of the budget keys, at least one; a
//   bad key or value is a 400 naming it); it is recorded, the parked runs restored, then the report answered.
// - An extension needs the `act` role (tokens.ts): a token that may act can already raise what a tree may spend,
//   since a message's own `budget` is added to what its tree has spent; a stricter role here would guard nothing.
import type { Context, Hono } from "hono";
import type { z } from "zod";
import type { Runtime } from "../runtime/api.ts";
import { ApiError } from "./errors.ts";
import { ContextIdParam, describeIssues, ExtendBudgetBody } from "./schemas.ts";

const parse = <S extends z.ZodType>(schema: S, value: unknown, where: string): z.infer<S> => {
  const r = schema.safeParse(value);
  if (!r.success) throw new ApiError("invalid_request", describeIssues(r.error, where));
  return r.data;
};

const rootOf = async (rt: Runtime, c: Context): Promise<string> => {
  const { id } = parse(ContextIdParam, c.req.param(), "path");
  const view = await rt.context(id);
  if (!view) throw new ApiError("not_found", `no context ${id}`);
  return view.rootContextId;
};

/** `readBody`: the request's JSON body, as the API reads every other one (its errors are the API's). */
export const budgetRoutes = (app: Hono, rt: Runtime, readBody: (c: Context) => Promise<unknown>): void => {
  app.get("/v1/contexts/:id/budget", async (c) => c.json(await rt.budget(await rootOf(rt, c))));

  app.post("/v1/contexts/:id/budget/extend", async (c) => {
    const more = parse(ExtendBudgetBody, await readBody(c), "body");
    const root = await rootOf(rt, c);
    await rt.extendBudget(root, more);
    return c.json(await rt.budget(root));
  });
};

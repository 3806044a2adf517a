// The tools a context's run is offered: the built-in ones, the embedder's, then the MCP tools its profile and project allow.
//
// Requirements:
// - Each tool comes with the spec the model sees; `call_subordinate` lists every profile with the MCP servers it may use.
// - MCP servers connect on the first run that may use them, are shared by every context, and close with `close()`.
// - A server that cannot be reached leaves its tools out of that run's set; the next run asks again.
// - Tools of your own and MCP tools get their ToolContext without the run's scope: only the built-in ones write to the run.
// - `decorate` (by default the run observer's: a span per call) wraps every tool the runs see, built-in, own and MCP alike.
import type { ToolSpec } from "../models/port.ts";
import { toolSpec } from "../models/toolSpec.ts";
import type { ContextView } from "../projections/contexts.ts";
import { describeProfileKeys, toolDescription } from "../profiles/profiles.ts";
import type { Tool, ToolContext } from "../tools/defineTool.ts";
import { responseTool } from "../tools/response.ts";
import { callSubordinateTool } from "../tools/callSubordinate.ts";
import { parallelTool } from "../tools/parallel.ts";
import { ownToolContext, type Delegator } from "../tools/delegator.ts";
import type { McpHub } from "../tools/mcp.ts";
import { mcpServersFor, type Configuration } from "./configuration.ts";

export type RunToolSet = { byName: ReadonlyMap<string, Tool<unknown>>; specs: ToolSpec[] };
export type RuntimeTools = {
  /** Never rejects; a stop (`signal`) while servers are still connecting gives the set without their tools. */
  forContext(view: Pick<ContextView, "profile" | "project">, signal?: AbortSignal): Promise<RunToolSet>;
  /** Closes the MCP connections. */
  close(): Promise<void>;
};

export const buildTools = (
  rt: Delegator,
  config: Configuration,
  decorate: (tool: Tool<unknown>) => Tool<unknown> = config.observer.tool,
): RuntimeTools => {
  const userTools: readonly Tool<any>[] = config.options.tools ?? [];
  const builtIn: Tool<any>[] = [responseTool, callSubordinateTool(rt)];
  const names = new Set([...builtIn.map((t) => t.name), "parallel"]);
  for (const t of userTools) {
    if (names.has(t.name)) throw new Error(`Tool '${t.name}' is defined twice.`);
    names.add(t.name);
  }
  const configured = Object.keys(config.mcpServers);
  const hub = configured.length > 0;
  // The MCP SDK loads with the first run that may use a server, not with the package.
  let opened: Promise<McpHub> | null = null;
  const openHub = () =>
    (opened ??= import("../tools/mcp.ts").then(({ mcpHub }) =>
      mcpHub(config.mcpServers, { ...config.options.mcp, reservedNames: [...names] }),
    ));

  /** The `call_subordinate` profile list of a project: each profile, what it is for, and its MCP servers. */
  const profileList = (project: string | null) =>
    rt
      .enabledProfiles(project)
      .sort()
      .map((k) => {
        const p = rt.profiles.get(k)!;
        const servers = hub ? mcpServersFor(config, k, project).sort() : [];
        // A remote profile's agent runs elsewhere, with its own tools: this runtime's MCP servers are not its.
        const mcp = p.remote
          ? " (a remote agent)"
          : hub
            ? ` (MCP tools from: ${servers.length > 0 ? servers.join(", ") : "none"})`
            : "";
        return `  - ${describeProfileKeys([k], rt.profiles)}: ${p.context || p.description}${mcp}`;
      })
      .join("\n");

  // A set depends only on the project (which profiles call_subordinate offers) and the profile (its MCP servers).
  const sets = new Map<string, Promise<RunToolSet>>();
  const assemble = async (
    profile: string,
    project: string | null,
    withMcp = true,
  ): Promise<{ set: RunToolSet; complete: boolean }> => {
    const servers = hub && withMcp ? mcpServersFor(config, profile, project) : [];
    const mcp = servers.length > 0 ? await (await openHub()).toolsFor(servers) : { tools: [], unavailable: [] };
    const profiles = profileList(project);
    const byName = new Map<string, Tool<unknown>>();
    const tools = [
      ...builtIn,
      parallelTool(rt, () => byName),
      ...[...userTools, ...mcp.tools].map(ownTool),
    ] as Tool<unknown>[];
    const specs: ToolSpec[] = [];
    for (const t of tools) {
      const description = toolDescription(config.library, t.name, { profiles }) ?? t.description;
      byName.set(t.name, decorate(t));
      specs.push(toolSpec({ name: t.name, description, input: t.input }));
    }
    return { set: { byName, specs }, complete: mcp.unavailable.length === 0 };
  };

  const setFor = (view: Pick<ContextView, "profile" | "project">): Promise<RunToolSet> => {
    const key = `${view.project ?? ""}\u0000${view.profile}`;
    const cached = sets.get(key);
    if (cached) return cached;
    const pending: Promise<RunToolSet> = assemble(view.profile, view.project).then(({ set, complete }) => {
      // A server that was down is asked again by the next run, rather than left out for good.
      if (!complete && sets.get(key) === pending) sets.delete(key);
      return set;
    });
    sets.set(key, pending);
    pending.catch(() => sets.delete(key));
    return pending;
  };
  const withoutMcp = async (view: Pick<ContextView, "profile" | "project">) =>
    (await assemble(view.profile, view.project, false)).set;

  return {
    async forContext(view, signal) {
      if (!signal) return setFor(view).catch(() => withoutMcp(view));
      if (signal.aborted) return withoutMcp(view);
      // The run unwinds at once after a stop: it must not wait for a server that is slow to connect.
      let onAbort = () => {};
      const stopped = new Promise<"stopped">((resolve) => {
        onAbort = () => resolve("stopped");
        signal.addEventListener("abort", onAbort, { once: true });
      });
      try {
        const set = await Promise.race([setFor(view), stopped]);
        return set === "stopped" ? withoutMcp(view) : set;
      } catch {
        return withoutMcp(view);
      } finally {
        signal.removeEventListener("abort", onAbort);
      }
    },
    async close() {
      await (await opened)?.close();
    },
  };
};

/** A tool of your own (or an MCP tool) as the runs call it: its calls never see the run's scope. */
const ownTool = <I>(tool: Tool<I>): Tool<I> => ({
  ...tool,
  run: (input, ctx) => tool.run(input, ownToolContext(ctx)),
  ...(tool.resume ? { resume: (input: I, ctx: ToolContext) => tool.resume!(input, ownToolContext(ctx)) } : {}),
});

// The tools a context's run is offered: the built-in ones, then the embedder's, each with the spec the model sees.
import type { ToolSpec } from "../models/port.ts";
import { toolSpec } from "../models/toolSpec.ts";
import type { ContextView } from "../projections/contexts.ts";
import { describeProfileKeys, toolDescription, type PromptLibrary } from "../profiles/profiles.ts";
import type { Tool } from "../tools/defineTool.ts";
import { responseTool } from "../tools/response.ts";
import { callSubordinateTool } from "../tools/callSubordinate.ts";
import { parallelTool } from "../tools/parallel.ts";
import type { Delegator } from "../tools/delegator.ts";

export type RunToolSet = { byName: ReadonlyMap<string, Tool<unknown>>; specs: ToolSpec[] };
export type RuntimeTools = { forContext(view: ContextView): RunToolSet };

export const buildTools = (rt: Delegator, library: PromptLibrary, userTools: readonly Tool<any>[]): RuntimeTools => {
  const builtIn: Tool<any>[] = [responseTool, callSubordinateTool(rt)];
  const names = new Set([...builtIn.map((t) => t.name), "parallel"]);
  for (const t of userTools) {
    if (names.has(t.name)) throw new Error(`Tool '${t.name}' is defined twice.`);
    names.add(t.name);
  }
  // The tool set depends only on the project (which profiles call_subordinate offers): build it once per project.
  const byProject = new Map<string | null, RunToolSet>();
  return {
    forContext(view) {
      const cached = byProject.get(view.project);
      if (cached) return cached;
      const profiles = rt
        .enabledProfiles(view.project)
        .sort()
        .map((k) => {
          const p = rt.profiles.get(k)!;
          return `  - ${describeProfileKeys([k], rt.profiles)}: ${p.context || p.description}`;
        })
        .join("\n");
      const byName = new Map<string, Tool<unknown>>();
      const tools = [...builtIn, parallelTool(rt, () => byName), ...userTools];
      const specs: ToolSpec[] = [];
      for (const t of tools) {
        const description = toolDescription(library, t.name, { profiles }) ?? t.description;
        byName.set(t.name, t as Tool<unknown>);
        specs.push(toolSpec({ name: t.name, description, input: t.input }));
      }
      const set = { byName, specs };
      byProject.set(view.project, set);
      return set;
    },
  };
};

// The agent card: who this runtime is to A2A clients, one skill per enabled profile, at the JSON-RPC endpoint it serves.
import { AgentCard } from "@a2a-js/sdk";
import type { Runtime } from "../runtime/api.ts";

export const A2A_PATH = "/a2a";

/** The card for a runtime reached at `origin` (e.g. http://127.0.0.1:7077); `bearer`: whether calls need a token. */
export const agentCardFor = (rt: Runtime, origin: string, bearer: boolean): AgentCard => ({
  name: "actorzero",
  description:
    "Hierarchical LLM agents on an append-only event log. Each skill is an agent profile; name it in the message's metadata.skill (default: the default profile).",
  supportedInterfaces: [
    { url: `${origin}${A2A_PATH}`, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "1.0" },
  ],
  provider: undefined,
  version: "0.1.0",
  capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: bearer
    ? {
        bearer: {
          scheme: {
            $case: "httpAuthSecurityScheme",
            value: { description: "The server's bearer token", scheme: "Bearer", bearerFormat: "" },
          },
        },
      }
    : {},
  securityRequirements: bearer ? [{ schemes: { bearer: { list: [] } } }] : [],
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
  skills: rt.profiles().map((p) => ({
    id: p.key,
    name: p.title,
    description: [p.description, p.context].filter((s) => s.trim() !== "").join("\n") || p.title,
    tags: [p.key],
    examples: [],
    inputModes: ["text/plain"],
    outputModes: ["text/plain"],
    securityRequirements: [],
  })),
  signatures: [],
});

/** The card as JSON on the wire (the v1.0 field names). */
export const agentCardJson = (card: AgentCard): unknown => AgentCard.toJSON(card);

// An A2A client (the SDK's, JSON-RPC transport) for a URL, with headers (credentials, traceparent) added to every request.
import { Role, type Message } from "@a2a-js/sdk";
import { type Client, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { textPart } from "./a2aTask.ts";

/** A client of the agent whose card is at `<url>/.well-known/agent-card.json`; `headers()` is asked per request. */
export const a2aClient = async (url: string, headers: () => Record<string, string> = () => ({})): Promise<Client> => {
  const fetchImpl: typeof fetch = (input, init) => {
    const merged = new Headers(init?.headers);
    for (const [k, v] of Object.entries(headers())) merged.set(k, v);
    return fetch(input, { ...init, headers: merged });
  };
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  return new ClientFactory(options).createFromUrl(url);
};

/** A user's text message, in a context when `contextId` is given (else the agent starts one). */
export const userMessage = (text: string, messageId: string, contextId = "", taskId = ""): Message => ({
  messageId,
  contextId,
  taskId,
  role: Role.ROLE_USER,
  parts: [textPart(text)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

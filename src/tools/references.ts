// Long tool results are stored in the log; later tool arguments can name them instead of rewriting them.

const REFERENCE = /§§result\(([^()\s]+)\)/g;

/** How a model writes a reference to the stored result of tool call `toolCallId`. */
export const resultReference = (toolCallId: string): string => `§§result(${toolCallId})`;

export class UnknownReferenceError extends Error {
  constructor(readonly toolCallId: string) {
    super(`No stored result for ${resultReference(toolCallId)}: use the tool call id given in a result's hint.`);
    this.name = "UnknownReferenceError";
  }
}

/** Replaces every reference inside `value` (strings at any depth) with the stored result it names. */
export const expandReferences = (value: unknown, lookup: (toolCallId: string) => string | undefined): unknown => {
  if (typeof value === "string") {
    if (!value.includes("§§result(")) return value;
    return value.replace(REFERENCE, (_m, id: string) => {
      const stored = lookup(id);
      if (stored === undefined) throw new UnknownReferenceError(id);
      return stored;
    });
  }
  if (Array.isArray(value)) return value.map((v) => expandReferences(v, lookup));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expandReferences(v, lookup)]));
  }
  return value;
};

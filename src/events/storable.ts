// JSONB cannot hold a NUL character or a lone UTF-16 surrogate; model output can contain both.

const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** The text with every character JSONB refuses replaced by U+FFFD (what a decoder shows for broken text). */
export const storableText = (s: string): string =>
  UNSTORABLE.test(s) ? ((UNSTORABLE.lastIndex = 0), s.replace(UNSTORABLE, "\uFFFD")) : s;

/** `value` with every string in it (keys too) made storable; the same object when nothing needed it (the common case, so nothing is copied then). */
export const storable = <T>(value: T): T => {
  if (typeof value === "string") return storableText(value) as T;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const s = storable(value[i]);
      if (s !== value[i] && out === undefined) out = value.slice(0, i);
      out?.push(s);
    }
    return (out ?? value) as T;
  }
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value);
    for (let i = 0; i < entries.length; i++) {
      const [k, v] = entries[i]!;
      const key = storableText(k);
      const s = storable(v);
      if (s === v && key === k) continue;
      // Something changed: copy what came before as it was, and the rest made storable.
      const out: Record<string, unknown> = Object.fromEntries(entries.slice(0, i));
      out[key] = s;
      for (const [k2, v2] of entries.slice(i + 1)) out[storableText(k2)] = storable(v2);
      return out as T;
    }
    return value;
  }
  return value;
};

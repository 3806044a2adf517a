// JSONB cannot hold a NUL character or a lone UTF-16 surrogate; model output can contain both.

const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** The text with every character JSONB refuses replaced by U+FFFD (what a decoder shows for broken text). */
export const storableText = (s: string): string => (UNSTORABLE.test(s) ? ((UNSTORABLE.lastIndex = 0), s.replace(UNSTORABLE, "\uFFFD")) : s);

/** `value` with every string in it (keys too) made storable; the same object when nothing needed it. */
export const storable = <T>(value: T): T => {
  if (typeof value === "string") return storableText(value) as T;
  if (Array.isArray(value)) {
    let changed = false;
    const out = value.map((v) => {
      const s = storable(v);
      if (s !== v) changed = true;
      return s;
    });
    return (changed ? out : value) as T;
  }
  if (value !== null && typeof value === "object") {
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const key = storableText(k);
      const s = storable(v);
      if (s !== v || key !== k) changed = true;
      out[key] = s;
    }
    return (changed ? out : value) as T;
  }
  return value;
};

// Plain ANSI escapes for colour and in-place redraws; colour only on a terminal and never with NO_COLOR.

export type Paint = {
  readonly enabled: boolean;
  bold(s: string): string;
  dim(s: string): string;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  blue(s: string): string;
  cyan(s: string): string;
  magenta(s: string): string;
};

const wrap = (open: number, close: number) => (s: string) => `\x1b[${open}m${s}\x1b[${close}m`;

export const paintFor = (stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): Paint => {
  const enabled = stream.isTTY === true && env["NO_COLOR"] === undefined && env["TERM"] !== "dumb";
  const id = (s: string) => s;
  return {
    enabled,
    bold: enabled ? wrap(1, 22) : id,
    dim: enabled ? wrap(2, 22) : id,
    red: enabled ? wrap(31, 39) : id,
    green: enabled ? wrap(32, 39) : id,
    yellow: enabled ? wrap(33, 39) : id,
    blue: enabled ? wrap(34, 39) : id,
    cyan: enabled ? wrap(36, 39) : id,
    magenta: enabled ? wrap(35, 39) : id,
  };
};

export const ESC = {
  hideCursor: "\x1b[?25l",
  showCursor: "\x1b[?25h",
  /** Moves the cursor up `n` lines to column 1. */
  up: (n: number) => (n > 0 ? `\x1b[${n}F` : "\r"),
  clearLine: "\x1b[2K",
  clearDown: "\x1b[J",
} as const;

// eslint-disable-next-line no-control-regex
const ANSI_PATTERN = /\x1b\[[0-9;?]*[A-Za-z]/g;

/** The width a string takes on screen (escapes removed; every code point counted as one column). */
export const visibleLength = (s: string): number => [...s.replace(ANSI_PATTERN, "")].length;

/** Cuts a line with escapes to `width` visible columns, keeping the escapes. */
export const cutVisible = (s: string, width: number): string => {
  if (visibleLength(s) <= width) return s;
  let out = "";
  let seen = 0;
  for (let i = 0; i < s.length;) {
    ANSI_PATTERN.lastIndex = i;
    const m = s[i] === "\x1b" ? ANSI_PATTERN.exec(s) : null;
    if (m && m.index === i) {
      out += m[0];
      i += m[0].length;
      continue;
    }
    const ch = String.fromCodePoint(s.codePointAt(i)!);
    if (seen < width - 1) out += ch;
    else if (seen === width - 1) out += "…";
    seen++;
    i += ch.length;
  }
  return out + "\x1b[0m";
};

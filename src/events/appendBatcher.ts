// Group commit: appends that queue while one is in flight go together, as one transaction.
//
// PGlite runs one message at a time in this process, and each append was a message and a transaction
// of its own: in a fan-out, dozens of contexts append at nearly the same moment and wait in line, one
// commit each. Several statements in ONE simple-protocol message run in one implicit transaction
// (PostgreSQL's rule for a multi-statement Query message): one commit for the group. The PostgreSQL
// store runs a few batchers side by side over its pool (lanes), each stream always in the same lane.
//
// The runtime's per-stream writer (actors/streamWriter.ts) gathers too, but one stream's appends, into one
// append with one expected version; here appends of many streams, each complete with its version, share a
// message. What one stream asks while its append waits is that writer's; what many streams send while a message is
// in flight is this batcher's.
//
// Requirements:
// - A lone append goes at once, alone, and a group holds only what queued while the message before it was
//   in flight. Nothing ever waits on a timer or for the end of the event loop's turn to gather a group:
//   waiting for the turn's end (tried on PGlite) grouped more under saturation (1,000 conversations: 203
//   against 159 delegations/s) but cost every append the rest of its turn, which a served runtime fills
//   with its clients' event streams (30 runs under 100 SSE clients: 2.5-2.75x the runs alone, against
//   0.78x) and cost 100 conversations 17% (93 against 112 delegations/s): measured in one quiet run each.
// - Statements are sent in the order they were queued, so they run, take their stream's lock (per
//   transaction and re-entrant) and take their positions in that order: each stream's chain links
//   each to the one before it, as if each had gone alone.
// - Each append settles only after the message holding it has ended, with its own statement's rows
//   (the message answers with one result per statement).
// - When a group fails, nothing of it committed: each member is sent again alone, in order, so each
//   gets its own outcome or its own error (and the caller's retry, e.g. runAppend's after a unique
//   violation, works per append as before). The same when the answer cannot be matched to the
//   statements. Sending again is safe even if a group did commit (a failure after the commit): every
//   append carries its event ids, and an append of stored ids answers with their stored outcome.
//   Positions a failed group drew are not handed out again: the log has a gap there, as after any
//   append that failed past its first nextval.
// - A group holds at most GROUP_MAX_STATEMENTS statements and about GROUP_MAX_CHARS of SQL text; a
//   statement larger than that goes alone.
// - Only appends go through here. Reads that follow an append (actorzero_find_appended after a
//   unique violation, the re-read of stored rows) need not queue behind it: they run after the
//   message they follow has ended, and they read rows that are committed and never change (the log is
//   append-only), so appends sent in between cannot change their answer.
// - A user's `sql.transaction(...)` still serialises with appends: each message here is one `execRaw`,
//   which takes PGlite's transaction mutex as any other call does.

/** Sends one simple-protocol message and returns one result per statement (the store's `execRaw`). */
export type ExecStatements = (sql: string) => Promise<readonly { rows: unknown[] }[]>;

/** The most statements one message holds: a fan-out's 64 contexts at once. */
export const GROUP_MAX_STATEMENTS = 64;
/** About how much SQL text one message holds (in UTF-16 units, near enough to bytes for a cap). */
export const GROUP_MAX_CHARS = 1 << 20;

/** Between statements of one message. */
const STATEMENT_SEPARATOR = ";\n";

export type GroupLimits = { maxStatements: number; maxChars: number };

const DEFAULT_LIMITS: GroupLimits = { maxStatements: GROUP_MAX_STATEMENTS, maxChars: GROUP_MAX_CHARS };

type Member = {
  statement: string;
  resolve: (rows: unknown[]) => void;
  reject: (error: unknown) => void;
};

export type AppendBatcher = {
  /** Sends one statement (an append's, with its parameters written in) and answers with its rows. */
  run: <R>(statement: string) => Promise<R[]>;
};

/**
 * Queues statements and sends them, each group as one message, one message at a time.
 *
 * @example
 * const appends = appendBatcher((sql) => execRaw(db, sql));
 * const [row] = await appends.run<{ result: AppendOutcome }>(appendStatement(params));
 */
export const appendBatcher = (exec: ExecStatements, limits: GroupLimits = DEFAULT_LIMITS): AppendBatcher => {
  const queue: Member[] = [];
  let sending = false;

  const sendAlone = async (member: Member) => {
    try {
      member.resolve((await exec(member.statement))[0]!.rows);
    } catch (e) {
      member.reject(e);
    }
  };

  /** The longest run at the head of the queue within the limits; at least one statement. */
  const takeGroup = (): Member[] => {
    let count = 1;
    let chars = queue[0]!.statement.length;
    while (count < queue.length && count < limits.maxStatements) {
      const next = chars + STATEMENT_SEPARATOR.length + queue[count]!.statement.length;
      if (next > limits.maxChars) break;
      chars = next;
      count++;
    }
    return queue.splice(0, count);
  };

  const sendGroup = async (group: readonly Member[]) => {
    let results: readonly { rows: unknown[] }[] | undefined;
    try {
      results = await exec(group.map((m) => m.statement).join(STATEMENT_SEPARATOR));
    } catch {
      results = undefined;
    }
    if (results?.length === group.length) {
      group.forEach((member, i) => member.resolve(results[i]!.rows));
      return;
    }
    // The group's error belongs to one member (or to none): each finds out its own, alone.
    for (const member of group) await sendAlone(member);
  };

  const drain = async () => {
    sending = true;
    try {
      while (queue.length > 0) {
        const group = takeGroup();
        if (group.length === 1) await sendAlone(group[0]!);
        else await sendGroup(group);
      }
    } finally {
      sending = false;
    }
  };

  return {
    run: <R>(statement: string) =>
      new Promise<R[]>((resolve, reject) => {
        queue.push({ statement, resolve: resolve as (rows: unknown[]) => void, reject });
        // Called here, not on a later tick: a lone statement's message is sent before run returns.
        if (!sending) void drain();
      }),
  };
};

/**
 * Runs the console's query on one connection and keeps only what the answer
 * needs: the last statement's fields and at most `cap` of its rows, and no
 * more of them than `byteCap` bytes of values, so a query that returns
 * millions of rows, or a few huge ones, never holds them in memory. A single
 * statement goes over the extended protocol with a row limit, so PostgreSQL
 * stops producing rows past the cap (what pg-cursor does); a script of several
 * goes over the simple protocol, and rows past the cap are dropped as they come.
 */
import pg from 'pg';
import { JsonText } from '../rows/exact-json';

export interface ResultField {
  name: string;
  dataTypeID: number;
  dataTypeModifier: number;
}

export interface StatementResult {
  fields: ResultField[];
  rows: Record<string, unknown>[];
  truncated: boolean;
  /** PostgreSQL's command tag (`INSERT 0 3`); null when the row limit stopped the statement. */
  commandTag: string | null;
}

/** `single`: one statement, extended protocol. `script`: any number, simple protocol. */
export type QueryMode = 'single' | 'script';

/** The protocol messages this query sends (pg's own typings of them are loose). */
interface ProtocolConnection {
  query(text: string): void;
  parse(message: { text: string }): void;
  bind(message: { portal?: string; statement?: string }): void;
  describe(message: { type: 'P'; name: string }): void;
  execute(message: { portal: string; rows: number }): void;
  flush(): void;
  sync(): void;
  sendCopyFail(message: string): void;
}

type Parser = (text: string) => unknown;

const TEXT_ARRAY_OID: number = 1009;
const TEXT_ARRAY = pg.types.getTypeParser(TEXT_ARRAY_OID, 'text') as Parser;
/**
 * Types answered as PostgreSQL writes them rather than as JavaScript objects:
 * dates and times (a JS Date loses microseconds and shifts `date` by the
 * process's time zone), intervals and bytea; their arrays become string arrays;
 * json and jsonb (below).
 * Floats stay numbers except NaN and ±Infinity, which JSON has no number for.
 */
/** A float as a number, but NaN and ±Infinity as PostgreSQL writes them: JSON would make them null. */
const float = (text: string) => {
  const value = Number(text);
  return Number.isFinite(value) ? value : text;
};
const FLOAT_ARRAY: Parser = (text) => (TEXT_ARRAY(text) as unknown[]).map(function each(item): unknown {
  return Array.isArray(item) ? item.map(each) : item === null ? null : float(item as string);
});
/**
 * json and jsonb as PostgreSQL's own text, written into the answer as it is
 * (sql.controller.ts): parsed, a value nested a few thousand levels deep
 * (PostgreSQL takes about 16,000) could not be serialised again, and the
 * answer of a query that had committed would be a 500; a number keeps its
 * digits too, as the rows API's answers do.
 */
const jsonText: Parser = (text) => new JsonText(text);
const JSON_ARRAY: Parser = (text) => (TEXT_ARRAY(text) as unknown[]).map(function each(item): unknown {
  return Array.isArray(item) ? item.map(each) : item === null ? null : new JsonText(item as string);
});
const AS_TEXT = new Map<number, Parser>([
  ...[17, 1082, 1083, 1114, 1184, 1186, 1266].map((oid): [number, Parser] => [oid, (text) => text]),
  ...[1001, 1182, 1183, 1115, 1185, 1187, 1270].map((oid): [number, Parser] => [oid, TEXT_ARRAY]),
  [700, float],
  [701, float],
  [1021, FLOAT_ARRAY],
  [1022, FLOAT_ARRAY],
  [114, jsonText],
  [3802, jsonText],
  [199, JSON_ARRAY],
  [3807, JSON_ARRAY],
]);

const parserOf = (oid: number): Parser => AS_TEXT.get(oid) ?? (pg.types.getTypeParser(oid, 'text') as Parser);

/** A pg `Submittable`: `client.query(new LastResultQuery(…))`, then await `result`. */
export class LastResultQuery implements pg.Submittable {
  readonly result: Promise<StatementResult | null>;
  private resolve!: (result: StatementResult | null) => void;
  private reject!: (error: unknown) => void;
  private current: StatementResult | null = null;
  private parsers: Parser[] = [];
  private connection: ProtocolConnection | null = null;
  private awaitingSync = false;
  /** Bytes of the values kept of the current statement's rows. */
  private bytes = 0;

  constructor(
    private readonly text: string,
    private readonly mode: QueryMode,
    private readonly cap: number,
    private readonly byteCap: number,
  ) {
    this.result = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  submit(connection: pg.Connection): void {
    this.connection = connection as unknown as ProtocolConnection;
    if (this.mode === 'script') {
      this.connection.query(this.text);
      return;
    }
    // Parse refuses a second statement (42601), which sends the caller to `script`.
    this.connection.parse({ text: this.text });
    this.connection.bind({});
    this.connection.describe({ type: 'P', name: '' });
    // One row more than the cap tells that there were more.
    this.connection.execute({ portal: '', rows: this.cap + 1 });
    // Sync only once the statement is over: sent now, it would be swallowed by a COPY FROM STDIN.
    this.connection.flush();
    this.awaitingSync = true;
  }

  /** Ends the extended-protocol exchange (PostgreSQL then answers ReadyForQuery). */
  private sync(): void {
    if (!this.awaitingSync) return;
    this.awaitingSync = false;
    this.connection?.sync();
  }

  handleRowDescription(message: { fields: ResultField[] }): void {
    this.current = { fields: message.fields, rows: [], truncated: false, commandTag: null };
    this.parsers = message.fields.map((field) => parserOf(field.dataTypeID));
    this.bytes = 0;
  }

  handleDataRow(message: { fields: (string | null)[] }): void {
    const statement = this.current!;
    if (statement.truncated || statement.rows.length >= this.cap) {
      statement.truncated = true;
      return;
    }
    // Rows are kept as a prefix: the first that does not fit ends what is kept.
    const size = message.fields.reduce((sum, raw) => sum + (raw === null ? 0 : Buffer.byteLength(raw)), 0);
    if (this.bytes + size > this.byteCap) {
      statement.truncated = true;
      return;
    }
    this.bytes += size;
    // No prototype: a column may be called `__proto__`.
    const row: Record<string, unknown> = Object.create(null);
    message.fields.forEach((raw, i) => {
      row[statement.fields[i]!.name] = raw === null ? null : this.parsers[i]!(raw);
    });
    statement.rows.push(row);
  }

  handleCommandComplete(message: { text: string }): void {
    // A statement that returns no rows sends no row description: it starts here.
    if (!this.current || this.current.commandTag !== null) this.current = { fields: [], rows: [], truncated: false, commandTag: null };
    this.current.commandTag = message.text;
    this.sync();
  }

  /** The row limit was reached (the extra row has marked the result truncated); the rest is never produced. */
  handlePortalSuspended(): void {
    this.sync();
  }

  handleEmptyQuery(): void {
    this.sync();
  }

  /** PostgreSQL answers the refusal with an error, which ends the statement. */
  handleCopyInResponse(): void {
    this.connection?.sendCopyFail('COPY FROM STDIN is not available in the SQL console');
  }

  /** `COPY … TO STDOUT` data is not part of a result. */
  handleCopyData(): void {}

  handleError(error: unknown): void {
    this.sync();
    this.reject(error);
  }

  handleReadyForQuery(): void {
    this.resolve(this.current);
  }
}

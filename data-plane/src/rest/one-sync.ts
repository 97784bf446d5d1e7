/**
 * A request's statements as one extended-protocol batch under a single Sync,
 * submitted through pg's `Submittable` hook (the one pg-cursor uses).
 *
 * PostgreSQL runs everything between two Syncs as one implicit transaction:
 * it commits at the Sync, and after an error it skips the rest and rolls back
 * there. So `set_config(…, true)` (SET LOCAL) plus the statement need no
 * BEGIN and COMMIT of their own: two statements and one ReadyForQuery instead
 * of four of each, which is most of what a small read costs PostgreSQL.
 */
import type pg from 'pg';

/** One statement of the batch; `name` '' means unnamed (parsed every time). */
export interface BatchStep {
  name: string;
  text: string;
  /** Already in wire form (pg's `utils.prepareValue`), so binding cannot throw half-way through a batch. */
  values: ReadonlyArray<string | Buffer | null>;
  /** Ask for the column names (a RowDescription) so rows come back as objects. */
  describe?: boolean;
}

/** What one step answered: its rows, as objects when described, else as raw text fields. */
export interface StepResult {
  rows: Array<Record<string, string | null>>;
  fields: Array<Array<string | null>>;
}

/** The parts of pg's Connection the batch writes to (pg's own Query uses the same). */
interface Wire {
  parsedStatements: Record<string, string>;
  stream: { cork?: () => void; uncork?: () => void };
  parse(config: { name: string; text: string; types?: unknown[] }): void;
  bind(config: { statement: string; values: ReadonlyArray<string | Buffer | null> }): void;
  describe(config: { type: 'P'; name: string }): void;
  execute(config: { portal: string; rows?: number }): void;
  sync(): void;
  on(event: 'parseComplete', listener: () => void): void;
  off(event: 'parseComplete', listener: () => void): void;
}

/**
 * Sends `steps` with one Sync and resolves with each step's rows once
 * PostgreSQL is ready again, or rejects with its first error (the batch rolled
 * back, the connection is clean). Named statements are parsed once per
 * connection and recorded in pg's own `parsedStatements`, so its Query agrees.
 */
export class OneSyncBatch implements pg.Submittable {
  readonly done: Promise<StepResult[]>;
  private resolve!: (results: StepResult[]) => void;
  private reject!: (error: unknown) => void;
  private readonly results: StepResult[];
  private columns: string[] | null = null;
  private step = 0;
  private parsing: BatchStep[] = [];
  private parsed = 0;
  private wire: Wire | null = null;
  private readonly onParsed = () => {
    const step = this.parsing[this.parsed++];
    if (step && this.wire) this.wire.parsedStatements[step.name] = step.text;
  };

  constructor(private readonly steps: readonly BatchStep[]) {
    this.results = steps.map(() => ({ rows: [], fields: [] }));
    this.done = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  submit(connection: unknown): void {
    const wire = connection as Wire;
    this.wire = wire;
    this.parsing = this.steps.filter((s) => s.name !== '' && wire.parsedStatements[s.name] !== s.text);
    if (this.parsing.length > 0) wire.on('parseComplete', this.onParsed);
    wire.stream.cork?.();
    try {
      for (const step of this.steps) {
        if (step.name === '' || wire.parsedStatements[step.name] !== step.text) wire.parse({ name: step.name, text: step.text });
        wire.bind({ statement: step.name, values: step.values });
        if (step.describe) wire.describe({ type: 'P', name: '' });
        wire.execute({ portal: '' });
      }
      wire.sync();
    } finally {
      wire.stream.uncork?.();
    }
  }

  handleRowDescription(message: { fields: Array<{ name: string }> }): void {
    this.columns = message.fields.map((f) => f.name);
  }

  handleDataRow(message: { fields: Array<string | null> }): void {
    const result = this.results[this.step];
    if (!result) return;
    if (this.columns) {
      const row: Record<string, string | null> = {};
      for (let i = 0; i < this.columns.length; i++) row[this.columns[i]!] = message.fields[i] ?? null;
      result.rows.push(row);
    } else {
      result.fields.push(message.fields);
    }
  }

  handleCommandComplete(): void {
    this.step++;
    this.columns = null;
  }

  handleEmptyQuery(): void {
    this.step++;
  }

  handlePortalSuspended(): void {}

  handleCopyInResponse(): void {}

  handleCopyData(): void {}

  /** pg calls this for an ErrorResponse (PostgreSQL then skips to the Sync and rolls back) or a lost connection. */
  handleError(error: unknown): void {
    this.finish();
    this.reject(error);
  }

  handleReadyForQuery(): void {
    this.finish();
    this.resolve(this.results);
  }

  private finish(): void {
    if (this.parsing.length > 0) this.wire?.off('parseComplete', this.onParsed);
  }
}

/**
 * A request's statements as one extended-protocol batch under a single Sync,
 * submitted to pg as a Query subclass (pg's submittable hook; its pipeline
 * mode takes only Query instances, whose rows all come back before the Sync).
 *
 * PostgreSQL runs everything between two Syncs as one implicit transaction:
 * it commits at the Sync, and after an error it skips the rest and rolls back
 * there. So `set_config(…, true)` (SET LOCAL) plus the statement need no
 * BEGIN and COMMIT of their own, and batches of different requests can follow
 * each other on one connection without waiting (pipelines.ts).
 */
import pg from 'pg';

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

/** The parts of pg's Connection a batch writes to (pg's own Query uses the same). */
interface Wire {
  parsedStatements: Record<string, string>;
  stream: { cork?: () => void; uncork?: () => void };
  parse(config: { name: string; text: string }): void;
  bind(config: { statement: string; values: ReadonlyArray<string | Buffer | null> }): void;
  describe(config: { type: 'P'; name: string }): void;
  execute(config: { portal: string }): void;
  sync(): void;
  on(event: 'parseComplete', listener: () => void): void;
}

/**
 * Named statements of one connection. Parsed ones live in pg's own
 * `parsedStatements`, so its Query agrees; one whose Parse is still on the way
 * (an earlier batch sent it) is pending, and a batch meeting it parses its own
 * unnamed copy: if that earlier batch fails before its Parse, nothing here
 * depends on it. ParseComplete messages go to the oldest unanswered batch,
 * since the connection answers in order; this holds because the data API's
 * connections carry only batches besides pg queries without parameters
 * (COMMIT, ROLLBACK, the catalog read), which go by the simple protocol and
 * send no Parse.
 */
class ConnectionStatements {
  readonly pending = new Set<string>();
  readonly batches: OneSyncBatch[] = [];

  constructor(readonly wire: Wire) {
    wire.on('parseComplete', () => this.batches[0]?.parsedOne());
  }
}

const statementsByConnection = new WeakMap<object, ConnectionStatements>();

function statementsOf(wire: Wire): ConnectionStatements {
  let statements = statementsByConnection.get(wire);
  if (!statements) {
    statements = new ConnectionStatements(wire);
    statementsByConnection.set(wire, statements);
  }
  return statements;
}

/**
 * Sends `steps` with one Sync; `done` resolves with each step's rows once
 * PostgreSQL has answered the Sync, or rejects with its first error (the
 * batch rolled back; the connection is clean for the next one).
 */
export class OneSyncBatch extends (pg.Query as unknown as new (text: string) => object) implements pg.Submittable {
  readonly done: Promise<StepResult[]>;
  private resolve!: (results: StepResult[]) => void;
  private reject!: (error: unknown) => void;
  private readonly results: StepResult[];
  private columns: string[] | null = null;
  private step = 0;
  private statements: ConnectionStatements | null = null;
  /** Each Parse this batch sent, in order: the named step it creates, or null for an unnamed one. */
  private readonly parses: Array<BatchStep | null> = [];
  private parseAnswers = 0;
  private readonly confirmed = new Set<BatchStep>();

  constructor(private readonly steps: readonly BatchStep[]) {
    // A string, not a config object: pg copies an object through its property descriptors, on every request.
    super('');
    this.results = steps.map(() => ({ rows: [], fields: [] }));
    this.done = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  submit(connection: unknown): void {
    const statements = statementsOf(connection as Wire);
    const wire = statements.wire;
    this.statements = statements;
    statements.batches.push(this);
    wire.stream.cork?.();
    try {
      for (const step of this.steps) {
        let name = step.name;
        if (name === '' || wire.parsedStatements[name] !== step.text) {
          if (name !== '' && statements.pending.has(name)) name = '';
          if (name !== '') statements.pending.add(name);
          this.parses.push(name === '' ? null : step);
          wire.parse({ name, text: step.text });
        }
        wire.bind({ statement: name, values: step.values });
        if (step.describe) wire.describe({ type: 'P', name: '' });
        wire.execute({ portal: '' });
      }
      wire.sync();
    } finally {
      wire.stream.uncork?.();
    }
  }

  /** A ParseComplete for this batch: they come in the order the Parses went. */
  parsedOne(): void {
    const step = this.parses[this.parseAnswers++];
    if (!step || !this.statements) return;
    this.statements.wire.parsedStatements[step.name] = step.text;
    this.statements.pending.delete(step.name);
    this.confirmed.add(step);
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

  /** The results of the steps PostgreSQL completed: all of them once `done` resolves, those before the failing one once it rejects. */
  answered(): StepResult[] {
    return this.results.slice(0, this.step);
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
    const statements = this.statements;
    if (!statements) return;
    const at = statements.batches.indexOf(this);
    if (at >= 0) statements.batches.splice(at, 1);
    // Parses that never completed (the batch failed first): the next batch parses them again.
    for (const step of this.parses) if (step && !this.confirmed.has(step)) statements.pending.delete(step.name);
    this.statements = null;
  }
}

import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { PasswordHasher } from '../auth/password';
import type { Replicas } from '../db/replicas';

const HTTP_LABELS = ['method', 'route', 'operation', 'status'] as const;
/** An abandoned request has no status: nothing was answered. */
const ABANDONED_LABELS = ['method', 'route', 'operation'] as const;

/** What is read, not counted, at each scrape: the password hashes under way, and the read replicas' figures. */
export interface MeasuredSources {
  readonly hasher?: Pick<PasswordHasher, 'load'>;
  readonly replicas?: Pick<Replicas, 'statementCounts'>;
  /** The API's door (http/admission.ts): how many requests wait for their turn. */
  readonly admission?: { readonly queued: number };
}

/**
 * The service's metrics, each named and described here, once, in one prom-client Registry of its
 * own (never prom-client's global one: a process may build several apps, as the tests do). An app
 * makes one (app.ts) and hands it to what counts: the DataSource's logger (every SQL statement)
 * and mysql2 pool events (data-source.ts), Sql (lock conflicts), the GraphQL pipeline, and the
 * request hook (observability.ts), which also serves the registry
 * at GET /metrics. Those call `inc` / `observe` on the metric itself.
 *
 * A counter with labels starts with each of its known label values at 0, so GET /metrics shows
 * them before the first one is counted. What other objects keep (the password hashes under way,
 * the replicas' statement counts and lag) is read at each scrape from the sources `measure` is
 * given.
 */
export class Metrics {
  readonly registry = new Registry();

  readonly httpRequests: Counter<(typeof HTTP_LABELS)[number]>;
  readonly httpRequestDuration: Histogram<(typeof HTTP_LABELS)[number]>;
  /** Requests whose client closed the connection before they were answered (not in httpRequests). */
  readonly httpRequestsAbandoned: Counter<(typeof ABANDONED_LABELS)[number]>;
  /** mysql2's pool events, counted as they come (data-source.ts); no values on SQLite. */
  readonly dbPoolEvents: Counter<'event'>;
  /** Read from the hasher at each scrape (see `measure`). */
  private readonly passwordHashes: Gauge<'state'>;
  /** Every SQL statement sent, on either database (the DataSource's logger is told of each). */
  readonly dbStatements: Counter;
  readonly lockConflicts: Counter<'outcome'>;
  /** Registered by `measure` only when there are read replicas. */
  private readonly poolStatements: Counter<'pool'>;
  private readonly replicaLag: Gauge<'pool'>;
  private readonly requestsWaiting: Gauge;
  readonly compiledRuns: Counter;
  readonly documents: Counter<'how'>;
  readonly documentsParsed: Counter<'step'>;

  private sources: MeasuredSources = {};

  /**
   * @param process also Node's own metrics (prom-client's defaults: CPU, memory, event loop, GC),
   *   for the app whose registry GET /metrics serves; a Sql made on its own (`npm run reconcile`)
   *   counts without them.
   */
  constructor({ process = false }: { process?: boolean } = {}) {
    const registers = [this.registry];
    if (process) collectDefaultMetrics({ register: this.registry });
    this.httpRequests = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered', labelNames: HTTP_LABELS, registers });
    this.httpRequestsAbandoned = new Counter({
      name: 'http_requests_abandoned_total',
      help: 'HTTP requests whose client closed the connection before they were answered (not in http_requests_total)',
      labelNames: ABANDONED_LABELS,
      registers,
    });
    this.httpRequestDuration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time to answer HTTP requests',
      labelNames: HTTP_LABELS,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    // mysql2's pool keeps its open, idle and waiting connections in private fields; what it
    // publishes are these events.
    this.dbPoolEvents = new Counter({
      name: 'db_pool_events_total',
      help: 'MySQL pool events: connection (a connection opened), acquire (one handed out), release (one back among the idle), enqueue (a statement waited for a free connection)',
      labelNames: ['event'] as const,
      registers,
    });
    // Each hash holds 32 MiB while it runs: a burst of logins shows here, and in the process's memory.
    const sources = () => this.sources;
    this.passwordHashes = new Gauge({
      name: 'password_hashes',
      help: 'Password hashes running, and waiting for a slot by lane (login, registration)',
      labelNames: ['state'] as const,
      registers,
      collect() {
        const hasher = sources().hasher;
        if (!hasher) return;
        const { running, waiting } = hasher.load();
        this.set({ state: 'running' }, running);
        this.set({ state: 'waiting_login' }, waiting.login);
        this.set({ state: 'waiting_registration' }, waiting.registration);
      },
    });
    this.requestsWaiting = new Gauge({
      name: 'http_requests_waiting',
      help: 'API requests waiting for their turn while every database connection has a statement',
      registers,
      collect() {
        this.set(sources().admission?.queued ?? 0);
      },
    });
    this.dbStatements = new Counter({ name: 'db_statements_total', help: 'SQL statements sent to the database', registers });
    this.lockConflicts = new Counter({
      name: 'db_lock_conflicts_total',
      help: 'Writes and transactions that lost a lock conflict (deadlock, lock wait timeout, SQLITE_BUSY): retried (run again after a randomized backoff), gave_up (answered SERVICE_UNAVAILABLE with Retry-After)',
      labelNames: ['outcome'] as const,
      registers,
    });
    zero(this.lockConflicts, [{ outcome: 'retried' }, { outcome: 'gave_up' }]);
    const statements = this.dbStatements;
    this.poolStatements = new Counter({
      name: 'db_pool_statements_total',
      help: 'SQL statements by the pool that answered them: the primary, or a read replica (DATABASE_REPLICA_URLS)',
      labelNames: ['pool'] as const,
      registers: [],
      // The replicas count what they answer; every statement is also in db_statements_total, so
      // the primary's are the rest.
      async collect() {
        const replicas = sources().replicas;
        if (!replicas) return;
        const total = (await statements.get()).values[0]?.value ?? 0;
        const counts = replicas.statementCounts();
        const onReplicas = counts.reduce((sum, replica) => sum + replica.statements, 0);
        this.reset();
        this.inc({ pool: 'primary' }, Math.max(0, total - onReplicas));
        for (const replica of counts) this.inc({ pool: replica.name }, replica.statements);
      },
    });
    this.replicaLag = new Gauge({
      name: 'db_replica_lag_seconds',
      help: 'How far each read replica is behind the primary (+Inf: away); above REPLICA_MAX_LAG it gets no reads',
      labelNames: ['pool'] as const,
      registers: [],
      collect() {
        for (const replica of sources().replicas?.statementCounts() ?? []) this.set({ pool: replica.name }, replica.lagMs / 1000);
      },
    });
    this.compiledRuns = new Counter({
      name: 'graphql_compiled_runs_total',
      help: 'GraphQL operations run by a plan graphql-jit compiled (a short document after its 10th run, or a trusted document)',
      registers,
    });
    this.documents = new Counter({
      name: 'graphql_documents_total',
      help: 'GraphQL documents by how they came: a trusted document by id or by its text, refused (PERSISTED_QUERY_NOT_FOUND)',
      labelNames: ['how'] as const,
      registers,
    });
    zero(this.documents, [{ how: 'id' }, { how: 'text' }, { how: 'refused' }]);
    this.documentsParsed = new Counter({
      name: 'graphql_documents_parsed_total',
      help: 'GraphQL documents parsed (and validated) for a request: neither a trusted document nor a text already in the document cache is',
      labelNames: ['step'] as const,
      registers,
    });
    zero(this.documentsParsed, [{ step: 'parse' }, { step: 'validate' }]);
  }

  /**
   * The objects read at each scrape: the password hasher, and the read replicas, whose per-pool
   * statements and lag are registered only then. Once per app (the registry refuses the
   * replicas' metrics twice).
   */
  measure(sources: MeasuredSources): void {
    this.sources = sources;
    if (!sources.replicas) return;
    this.registry.registerMetric(this.poolStatements);
    this.registry.registerMetric(this.replicaLag);
  }
}

/** Shows each of a counter's known label values, at 0 until counted. */
function zero<L extends string>(counter: Counter<L>, labels: readonly Partial<Record<L, string>>[]): void {
  for (const values of labels) counter.inc(values, 0);
}

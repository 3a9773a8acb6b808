import { createPool, type Pool } from 'mysql2';
import { BEAT, LAG } from './replica.queries';

/** How often the primary's heartbeat row is written, and each replica's lag is read. */
const BEAT_MS = 250;
const PROBE_MS = 250;
/** A probe that takes longer counts as a replica away. */
const PROBE_TIMEOUT_MS = 1000;

interface Replica {
  readonly name: string;
  readonly pool: Pool;
  healthy: boolean;
  /** Statements it answered (GET /metrics: db_pool_statements_total). */
  statements: number;
  /** The lag last measured, in ms (Infinity: away or not measured yet). */
  lagMs: number;
}

export interface ReplicaLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

/**
 * The read replicas (DATABASE_REPLICA_URLS): a mysql2 pool each, with the options of the
 * primary's. Reads that may lag (Sql.rows with `mayLag`) go to a healthy one, in turn; with none
 * healthy, to the primary. Healthy means answering, with a lag of at most REPLICA_MAX_LAG.
 *
 * The lag is measured, not asked: every BEAT_MS the primary's one-row table replica_heartbeat gets
 * the time (this instance writes it; every instance with replicas does), and each replica is asked
 * how old the row it has applied is. A replica whose SQL thread is stopped, or whose link to the
 * primary broke, falls behind by the clock (Seconds_Behind_Master would say NULL at once, and
 * only on MySQL-family servers that report it); one that is away fails the probe.
 */
export class Replicas {
  private readonly replicas: Replica[];
  private next = 0;
  private timers: NodeJS.Timeout[] = [];
  private stopped = false;

  constructor(
    urls: readonly string[],
    private readonly maxLagMs: number,
    poolOptions: Record<string, unknown>,
    private readonly log: ReplicaLog,
    /** With tracing on: runs the heartbeat and probes without spans (eight a second would bury the requests'). */
    private readonly untraced: <T>(work: () => T) => T = (work) => work(),
  ) {
    this.replicas = urls.map((uri, i) => ({
      name: `replica${i + 1}`,
      pool: createPool({ ...poolOptions, uri }),
      healthy: false,
      statements: 0,
      lagMs: Infinity,
    }));
  }

  /** How many replicas there are, healthy or not. */
  get size(): number {
    return this.replicas.length;
  }

  /** A healthy replica's pool (round robin), or undefined: read from the primary. */
  pick(): { pool: Pool; counted: () => void; failed: () => void } | undefined {
    const count = this.replicas.length;
    for (let tried = 0; tried < count; tried += 1) {
      const replica = this.replicas[this.next];
      this.next = (this.next + 1) % count;
      if (replica.healthy) {
        return {
          pool: replica.pool,
          counted: () => void (replica.statements += 1),
          failed: () => this.markDown(replica, 'a read failed'),
        };
      }
    }
    return undefined;
  }

  /** Statements answered by each replica, by name. */
  statementCounts(): { name: string; statements: number; lagMs: number; healthy: boolean }[] {
    return this.replicas.map(({ name, statements, lagMs, healthy }) => ({ name, statements, lagMs, healthy }));
  }

  /** Starts the heartbeat on the primary and the probes, once the primary is connected. */
  start(primary: () => Pool | undefined): void {
    // A beat that fails (the primary away, or its migrations not run yet) is simply the next one's to make.
    const beat = () => {
      const pool = primary();
      if (!pool || this.stopped) return;
      pool.query({ sql: BEAT, timeout: PROBE_TIMEOUT_MS }, () => undefined);
    };
    this.timers.push(setInterval(() => this.untraced(beat), BEAT_MS));
    for (const replica of this.replicas) this.timers.push(setInterval(() => this.untraced(() => this.probe(replica)), PROBE_MS));
    for (const timer of this.timers) timer.unref();
    this.untraced(beat);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearInterval(timer);
    await Promise.all(this.replicas.map((replica) => new Promise<void>((resolve) => replica.pool.end(() => resolve()))));
  }

  private probe(replica: Replica): void {
    if (this.stopped) return;
    replica.pool.query({ sql: LAG, timeout: PROBE_TIMEOUT_MS }, (error, rows) => {
      if (this.stopped) return;
      const lag = Array.isArray(rows) ? (rows[0] as { lag?: number | string | null } | undefined)?.lag : undefined;
      if (error || lag === undefined || lag === null) {
        replica.lagMs = Infinity;
        this.markDown(replica, error ? 'away' : 'no heartbeat yet');
        return;
      }
      replica.lagMs = Number(lag) / 1000;
      if (replica.lagMs > this.maxLagMs) this.markDown(replica, 'behind');
      else if (!replica.healthy) {
        replica.healthy = true;
        this.log.info({ replica: replica.name, lagMs: replica.lagMs }, 'replica serving reads');
      }
    });
  }

  private markDown(replica: Replica, reason: string): void {
    if (!replica.healthy) return;
    replica.healthy = false;
    this.log.warn({ replica: replica.name, reason, lagMs: replica.lagMs }, 'replica gets no reads until it catches up');
  }
}

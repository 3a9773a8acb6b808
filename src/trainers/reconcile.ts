import type { DatabaseConfig } from '../config';
import { createDataSource } from '../db/data-source';
import { Sql } from '../db/sql';
import { ReconcileQueries } from './trainer.queries';

/** How long one of reconcile's statements may take (a bucket of 65,536 trainers is counted in one). */
const STATEMENT_TIMEOUT_MS = 60_000;

/** Trainers per transaction: a short one, whose locks other writes wait for only briefly. */
const TRAINERS_PER_CHUNK = 1000;

export interface ReconcileLog {
  info(details: object, message: string): void;
}

export interface Reconciled {
  readonly trainers: number;
  readonly countsChanged: number;
  readonly buckets: number;
}

/**
 * Makes what the service maintains in each write exact again after rows were changed by plain
 * SQL (an import): every trainer's creatures_owned, its nickname suffixes (nicknameContains) and
 * the counts by team (totalCount); and removes the creatures and kept events that a trainer's deletion stopped
 * midway (the process or the database went away) left behind, invisible. It walks the trainer ids up to the last one there when it
 * starts (ReconcileQueries.lastId), TRAINERS_PER_CHUNK at a time, then every bucket of counts
 * that holds a trainer or a count, one at a time, each in a short transaction of its own, so
 * instances keep serving meanwhile. It never removes what a write made while it ran: a trainer
 * registered meanwhile has a higher id, outside every range it rewrites, and a bucket is
 * counted anew in one transaction that registrations in it wait for (no bucket is dropped
 * outside one). It can be run again at any time; nothing of the kind runs when an instance starts.
 */
async function reconcile(queries: ReconcileQueries, log: ReconcileLog, chunk = TRAINERS_PER_CHUNK): Promise<Reconciled> {
  let trainers = 0;
  let countsChanged = 0;
  let creaturesRemoved = 0;
  const range = async (from: number, to: number) => {
    const done = await queries.trainers(from, to);
    countsChanged += done.countsChanged;
    creaturesRemoved += done.creaturesRemoved;
  };
  const top = await queries.lastId();
  let last = 0;
  for (;;) {
    const ids = await queries.idsAfter(last, top, chunk);
    if (ids.length === 0) break;
    const to = ids[ids.length - 1];
    await range(last, to);
    trainers += ids.length;
    last = to;
  }
  // Suffixes and creatures left above the last trainer, up to the last id there was (trainers
  // removed by plain SQL, or a deletion that stopped midway).
  if (last < top) await range(last, top);
  log.info(
    { trainers, countsChanged, creaturesRemoved },
    "reconcile: creature counts, nickname suffixes and deleted trainers' creatures done",
  );

  let buckets = 0;
  for (let bucket = await queries.nextBucket(0); bucket !== null; bucket = await queries.nextBucket(bucket + 1)) {
    await queries.bucket(bucket);
    buckets += 1;
  }
  log.info({ buckets }, 'reconcile: counts by team done');
  return { trainers, countsChanged, buckets };
}

export interface ReconcileOptions {
  /** Trainers per transaction (TRAINERS_PER_CHUNK). */
  readonly chunk?: number;
  /** The statements it runs (tests pass a subclass that writes between two of them). */
  readonly queries?: (sql: Sql) => ReconcileQueries;
}

/** reconcile on a connection of its own to `database` (`npm run reconcile`, and the benchmark's import). */
export async function reconcileDatabase(database: DatabaseConfig, log: ReconcileLog, options: ReconcileOptions = {}): Promise<Reconciled> {
  const dataSource = createDataSource(database);
  await dataSource.initialize();
  try {
    const sql = new Sql(dataSource, { timeoutMs: STATEMENT_TIMEOUT_MS, slowMs: STATEMENT_TIMEOUT_MS });
    return await reconcile((options.queries ?? ((s) => new ReconcileQueries(s)))(sql), log, options.chunk);
  } finally {
    await dataSource.destroy();
  }
}

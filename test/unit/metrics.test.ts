import { register } from 'prom-client';
import { Metrics } from '../../src/ops/metrics';

/*
 * The service's metrics object: what GET /metrics shows before anything is counted, what it reads
 * from the password hasher and the read replicas at each scrape, and that every app's metrics are
 * its own (the tests build many apps in one process).
 */

const text = (metrics: Metrics) => metrics.registry.metrics();
/** The sample lines (not # HELP / # TYPE) of the metric `name`. */
const samples = async (metrics: Metrics, name: string) =>
  (await text(metrics)).split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));

const replicasAt = (replicas: { name: string; statements: number; lagMs: number }[]) => ({
  statementCounts: () => replicas.map((replica) => ({ ...replica, healthy: true })),
});

describe('Metrics', () => {
  it('shows every counter at 0, each known label value included, before anything is counted', async () => {
    const metrics = new Metrics();
    expect(await samples(metrics, 'db_statements_total')).toEqual(['db_statements_total 0']);
    expect(await samples(metrics, 'db_lock_conflicts_total')).toEqual([
      'db_lock_conflicts_total{outcome="retried"} 0',
      'db_lock_conflicts_total{outcome="gave_up"} 0',
    ]);
    expect(await samples(metrics, 'graphql_compiled_runs_total')).toEqual(['graphql_compiled_runs_total 0']);
    expect(await samples(metrics, 'graphql_documents_total')).toEqual([
      'graphql_documents_total{how="id"} 0',
      'graphql_documents_total{how="text"} 0',
      'graphql_documents_total{how="refused"} 0',
    ]);
    expect(await samples(metrics, 'graphql_documents_parsed_total')).toEqual([
      'graphql_documents_parsed_total{step="parse"} 0',
      'graphql_documents_parsed_total{step="validate"} 0',
    ]);
    // The pool's events come only from a MySQL pool (data-source.ts), and no hasher was given.
    expect(await samples(metrics, 'db_pool_events_total')).toEqual([]);
    expect(await samples(metrics, 'password_hashes')).toEqual([]);
  });

  it('counts what is incremented on it, by label', async () => {
    const metrics = new Metrics();
    metrics.lockConflicts.inc({ outcome: 'retried' });
    metrics.lockConflicts.inc({ outcome: 'retried' });
    metrics.lockConflicts.inc({ outcome: 'gave_up' });
    metrics.documents.inc({ how: 'text' });
    metrics.dbStatements.inc();
    expect(await samples(metrics, 'db_lock_conflicts_total')).toEqual([
      'db_lock_conflicts_total{outcome="retried"} 2',
      'db_lock_conflicts_total{outcome="gave_up"} 1',
    ]);
    expect(await samples(metrics, 'graphql_documents_total')).toEqual([
      'graphql_documents_total{how="id"} 0',
      'graphql_documents_total{how="text"} 1',
      'graphql_documents_total{how="refused"} 0',
    ]);
    expect(await samples(metrics, 'db_statements_total')).toEqual(['db_statements_total 1']);
  });

  it("keeps each app's metrics in its own registry, never prom-client's global one", async () => {
    const [one, other] = [new Metrics(), new Metrics()];
    one.dbStatements.inc(5);
    one.compiledRuns.inc();
    expect(await samples(one, 'db_statements_total')).toEqual(['db_statements_total 5']);
    expect(await samples(other, 'db_statements_total')).toEqual(['db_statements_total 0']);
    expect(await samples(other, 'graphql_compiled_runs_total')).toEqual(['graphql_compiled_runs_total 0']);
    expect(register.getSingleMetric('db_statements_total')).toBeUndefined();
    expect(await register.getMetricsAsJSON()).toEqual([]);
  });

  it("adds Node's own metrics only when asked", async () => {
    expect(await text(new Metrics())).not.toMatch(/^process_cpu_user_seconds_total /m);
    expect(await text(new Metrics({ process: true }))).toMatch(/^process_cpu_user_seconds_total /m);
  });

  it('reads the password hashes under way at each scrape', async () => {
    const metrics = new Metrics();
    const load = { running: 2, waiting: { login: 3, registration: 0 } };
    metrics.measure({ hasher: { load: () => load } });
    expect(await samples(metrics, 'password_hashes')).toEqual([
      'password_hashes{state="running"} 2',
      'password_hashes{state="waiting_login"} 3',
      'password_hashes{state="waiting_registration"} 0',
    ]);
    load.running = 0;
    load.waiting.login = 0;
    expect(await samples(metrics, 'password_hashes')).toEqual([
      'password_hashes{state="running"} 0',
      'password_hashes{state="waiting_login"} 0',
      'password_hashes{state="waiting_registration"} 0',
    ]);
  });

  it('shows statements by pool and lag only with read replicas: the primary answered every statement the replicas did not', async () => {
    const without = new Metrics();
    without.measure({});
    expect(await text(without)).not.toMatch(/db_pool_statements_total|db_replica_lag_seconds/);

    const metrics = new Metrics();
    const replicas = [
      { name: 'replica1', statements: 4, lagMs: 250 },
      { name: 'replica2', statements: 1, lagMs: Infinity },
    ];
    metrics.measure({ replicas: replicasAt(replicas) });
    metrics.dbStatements.inc(12);
    expect(await samples(metrics, 'db_pool_statements_total')).toEqual([
      'db_pool_statements_total{pool="primary"} 7',
      'db_pool_statements_total{pool="replica1"} 4',
      'db_pool_statements_total{pool="replica2"} 1',
    ]);
    expect(await samples(metrics, 'db_replica_lag_seconds')).toEqual([
      'db_replica_lag_seconds{pool="replica1"} 0.25',
      'db_replica_lag_seconds{pool="replica2"} +Inf',
    ]);
    // Counted afresh at each scrape.
    replicas[0].statements = 6;
    metrics.dbStatements.inc(3);
    expect(await samples(metrics, 'db_pool_statements_total')).toEqual([
      'db_pool_statements_total{pool="primary"} 8',
      'db_pool_statements_total{pool="replica1"} 6',
      'db_pool_statements_total{pool="replica2"} 1',
    ]);
  });
});

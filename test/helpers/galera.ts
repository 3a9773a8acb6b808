import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { freePorts } from './ports';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';

/**
 * A private three-node MariaDB Galera cluster (multi-primary) for tests: the machine's mariadbd
 * with Debian's galera-4 provider, each node on free ports of 127.0.0.1 (SQL, group
 * communication, IST, SST) with a data folder of its own under the temporary folder, root
 * without a password, rsync state transfers. The shared server the other suites use is never
 * touched. Without the binaries the tests are skipped with a loud warning, except under CI=true,
 * where they fail. `stop` always removes what it started.
 */

const PROVIDERS = ['/usr/lib/galera/libgalera_smm.so', '/usr/lib/libgalera_smm.so', '/usr/lib/galera-4/libgalera_smm.so'];

interface Node {
  readonly port: number;
  readonly galeraPort: number;
  readonly istPort: number;
  readonly sstPort: number;
  readonly dir: string;
  process: ChildProcess | undefined;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class GaleraCluster {
  private constructor(
    private readonly root: string,
    private readonly provider: string,
    readonly nodes: readonly Node[],
  ) {}

  static async start(what: string): Promise<GaleraCluster | undefined> {
    const provider = process.env.GALERA_PROVIDER ?? PROVIDERS.find((path) => existsSync(path));
    const usable =
      provider !== undefined &&
      spawnSync('mariadbd', ['--version']).status === 0 &&
      spawnSync('mariadb-install-db', ['--help']).error === undefined &&
      spawnSync('rsync', ['--version']).status === 0 &&
      spawnSync('id', ['mysql']).status === 0;
    if (!usable) {
      const message = 'no mariadbd / galera-4 / rsync / mysql user to start a private Galera cluster';
      if (process.env.CI === 'true') throw new Error(`${message}: ${what} required when CI=true`);
      process.stderr.write(`\n*** ${message}: ${what} SKIPPED ***\n`);
      return undefined;
    }
    const root = mkdtempSync(join(tmpdir(), 'registry-galera-'));
    // mariadbd runs as mysql (rsync's SST daemon cannot write as root's "nobody"): it must reach its folders.
    chmodSync(root, 0o755);
    const template = join(root, 'template');
    const installed = spawnSync(
      'mariadb-install-db',
      ['--no-defaults', `--datadir=${template}`, '--auth-root-authentication-method=normal', '--skip-test-db', '--user=mysql'],
      { encoding: 'utf8', timeout: 60_000 },
    );
    if (installed.status !== 0) throw new Error(`mariadb-install-db failed: ${installed.stderr}`);
    const ports = await freePorts(12);
    const nodes: Node[] = [0, 1, 2].map((i) => ({
      port: ports[i * 4],
      galeraPort: ports[i * 4 + 1],
      istPort: ports[i * 4 + 2],
      sstPort: ports[i * 4 + 3],
      dir: join(root, `node${i + 1}`),
      process: undefined,
    }));
    // Each node starts from the same fresh install; the joiners take node 1's state by SST anyway.
    for (const node of nodes) cpSync(template, node.dir, { recursive: true });
    rmSync(template, { recursive: true, force: true });
    spawnSync('chown', ['-R', 'mysql:mysql', root]);
    const cluster = new GaleraCluster(root, provider, nodes);
    try {
      await cluster.launch(nodes[0], ['--wsrep-new-cluster']);
      await Promise.all(nodes.slice(1).map((node) => cluster.launch(node, [])));
      await cluster.synced();
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** A server URL (no database) of node `i` (0, 1, 2). */
  url(i: number, database?: string): string {
    return `mysql://root@127.0.0.1:${this.nodes[i].port}${database ? `/${database}` : ''}`;
  }

  async query(i: number, sql: string, values: unknown[] = []): Promise<unknown> {
    const connection = await createConnection({ uri: this.url(i), connectTimeout: 5000 });
    try {
      const [rows] = await connection.query(sql, values);
      return rows;
    } finally {
      await connection.end();
    }
  }

  /** Kills node `i` as a crash would (SIGKILL) and waits until it is gone. */
  async kill(i: number): Promise<void> {
    const node = this.nodes[i];
    const child = node.process;
    node.process = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  /**
   * Starts a killed node again as Debian's service unit does (galera_recovery): `--wsrep-recover`
   * first, which finds the last transaction InnoDB committed, then the server from that position,
   * so that it catches up by IST from a member's cache (a full SST by rsync would block the donor
   * node's writes while it copies). Waits until every node is synced.
   */
  async revive(i: number): Promise<void> {
    const node = this.nodes[i];
    const log = join(node.dir, 'recover.log');
    spawnSync('mariadbd', [...this.arguments(node), '--wsrep-recover', `--log-error=${log}`], { timeout: 60_000 });
    const position = /Recovered position: (\S+)/.exec(existsSync(log) ? readFileSync(log, 'utf8') : '')?.[1];
    await this.launch(node, position ? [`--wsrep-start-position=${position}`] : []);
    await this.synced();
  }

  /** Waits until the cluster has three synced members. */
  async synced(ms = 60_000): Promise<void> {
    const deadline = Date.now() + ms;
    for (;;) {
      const states = await Promise.all(
        this.nodes.map((_node, i) =>
          this.query(i, "SHOW STATUS WHERE Variable_name IN ('wsrep_cluster_size', 'wsrep_local_state_comment')").then(
            (rows) => Object.fromEntries((rows as { Variable_name: string; Value: string }[]).map((r) => [r.Variable_name, r.Value])),
            () => undefined,
          ),
        ),
      );
      if (states.every((state) => state?.wsrep_cluster_size === '3' && state.wsrep_local_state_comment === 'Synced')) return;
      if (Date.now() > deadline) throw new Error(`the Galera cluster did not sync: ${JSON.stringify(states)}`);
      await sleep(200);
    }
  }

  async stop(): Promise<void> {
    for (let i = this.nodes.length - 1; i >= 0; i -= 1) await this.kill(i);
    rmSync(this.root, { recursive: true, force: true });
  }

  /** The server's arguments for `node` (its ports, folders and the cluster's members). */
  private arguments(node: Node): string[] {
    const members = this.nodes.map((n) => `127.0.0.1:${n.galeraPort}`).join(',');
    return [
      '--no-defaults',
      '--user=mysql',
      `--datadir=${node.dir}`,
      `--socket=${join(node.dir, 'mysqld.sock')}`,
      `--pid-file=${join(node.dir, 'mysqld.pid')}`,
      `--log-error=${join(node.dir, 'error.log')}`,
      `--port=${node.port}`,
      '--bind-address=127.0.0.1',
      '--skip-name-resolve',
      '--innodb-buffer-pool-size=64M',
      '--max-connections=300',
      '--binlog-format=ROW',
      '--innodb-autoinc-lock-mode=2',
      '--wsrep-on=ON',
      `--wsrep-provider=${this.provider}`,
      '--wsrep-cluster-name=registry_test',
      `--wsrep-cluster-address=gcomm://${members}`,
      `--wsrep-node-address=127.0.0.1:${node.galeraPort}`,
      // A member that stops answering is evicted within about 2 s (the default, 5 s, is as long as
      // the service's statement timeout: writes on the other nodes stall until the eviction).
      `--wsrep-provider-options=base_port=${node.galeraPort};ist.recv_addr=127.0.0.1:${node.istPort};gcache.size=64M;evs.suspect_timeout=PT2S;evs.inactive_timeout=PT4S;evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S`,
      '--wsrep-sst-method=rsync',
      `--wsrep-sst-receive-address=127.0.0.1:${node.sstPort}`,
    ];
  }

  private async launch(node: Node, extra: string[]): Promise<void> {
    node.process = spawn('mariadbd', [...this.arguments(node), ...extra], { stdio: 'ignore' });
    const child = node.process;
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) {
        throw new Error(`mariadbd (Galera) exited: ${readFileSync(join(node.dir, 'error.log'), 'utf8').slice(-2000)}`);
      }
      const up = await createConnection({ uri: `mysql://root@127.0.0.1:${node.port}`, connectTimeout: 1000 }).then(
        async (connection) => {
          await connection.end();
          return true;
        },
        () => false,
      );
      if (up) return;
      if (Date.now() > deadline) throw new Error(`mariadbd (Galera) did not answer on port ${node.port}`);
      await sleep(100);
    }
  }
}

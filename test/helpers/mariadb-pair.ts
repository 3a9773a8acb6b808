import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { freePort } from './ports';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection, type Connection } from 'mysql2/promise';

/**
 * A private MariaDB primary (binary log on) and its replica, for the read-replica tests: the
 * machine's own mariadbd and mariadb-install-db, started on free ports of 127.0.0.1 with data
 * folders of their own under the temporary folder, root without a password, GTID replication.
 * The shared server the other suites use is never touched. Without the binaries the tests are
 * skipped with a loud warning, except under CI=true, where they fail.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The sequence number of a GTID position of one domain (`0-1-42`), 0 when empty. */
const sequence = (position: string): number => Number(/-(\d+)$/.exec(position)?.[1] ?? 0);

interface Server {
  readonly port: number;
  readonly dir: string;
  process: ChildProcess | undefined;
}

export class MariaDbPair {
  private constructor(
    private readonly root: string,
    private readonly daemon: string,
    readonly primary: Server,
    readonly replica: Server,
  ) {}

  static async start(what: string): Promise<MariaDbPair | undefined> {
    const daemon = process.env.MARIADBD_BIN ?? 'mariadbd';
    const install = process.env.MARIADB_INSTALL_DB_BIN ?? 'mariadb-install-db';
    // mariadb-install-db has no --version, and its --help exits 1: whether it runs at all is what counts.
    if (spawnSync(daemon, ['--version']).status !== 0 || spawnSync(install, ['--help']).error !== undefined) {
      const message = `no ${daemon} / ${install} to start a private MariaDB primary and replica`;
      if (process.env.CI === 'true') throw new Error(`${message}: ${what} required when CI=true`);
      process.stderr.write(`\n*** ${message}: ${what} SKIPPED ***\n`);
      return undefined;
    }
    const root = mkdtempSync(join(tmpdir(), 'registry-replication-'));
    const template = join(root, 'template');
    const installed = spawnSync(
      install,
      ['--no-defaults', `--datadir=${template}`, '--auth-root-authentication-method=normal', '--skip-test-db', '--user=root'],
      { encoding: 'utf8', timeout: 60_000 },
    );
    if (installed.status !== 0) throw new Error(`mariadb-install-db failed: ${installed.stderr}`);
    const primary: Server = { port: await freePort(), dir: join(root, 'primary'), process: undefined };
    const replica: Server = { port: await freePort(), dir: join(root, 'replica'), process: undefined };
    // A copy of one fresh install for each: the same system tables, in half the time.
    cpSync(template, primary.dir, { recursive: true });
    cpSync(template, replica.dir, { recursive: true });
    rmSync(template, { recursive: true, force: true });
    const pair = new MariaDbPair(root, daemon, primary, replica);
    try {
      await pair.launch(primary, ['--log-bin=binlog', '--server-id=1', '--binlog-format=ROW']);
      await pair.launch(replica, ['--server-id=2', '--read-only', '--log-slave-updates=0']);
      await pair.onReplica(
        `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=${primary.port}, MASTER_USER='root', MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos`,
      );
      await pair.onReplica('START SLAVE');
    } catch (error) {
      await pair.stop();
      throw error;
    }
    return pair;
  }

  /** A server URL (no database) of the primary or the replica. */
  url(which: 'primary' | 'replica', database?: string): string {
    const server = which === 'primary' ? this.primary : this.replica;
    return `mysql://root@127.0.0.1:${server.port}${database ? `/${database}` : ''}`;
  }

  /** A new database on the primary, and once the replica has it too. */
  async createDatabase(name: string): Promise<void> {
    await this.onPrimary(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
    await this.caughtUp();
  }

  /** The replica stops applying what it receives: it lags from now on, by as long as it stays stopped. */
  async stopApplying(): Promise<void> {
    await this.onReplica('STOP SLAVE SQL_THREAD');
  }

  /** Applies again what it missed. */
  async resumeApplying(): Promise<void> {
    await this.onReplica('START SLAVE SQL_THREAD');
    await this.caughtUp();
  }

  /** Kills the replica's server, as a crash would. */
  async killReplica(): Promise<void> {
    const child = this.replica.process;
    this.replica.process = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  /**
   * Waits until the replica has applied everything the primary had written when asked (the
   * primary keeps writing: the service's heartbeat). One GTID domain here: positions compare by
   * their sequence number.
   */
  async caughtUp(ms = 20_000): Promise<void> {
    const [[{ pos }]] = (await this.query('primary', 'SELECT @@gtid_binlog_pos AS pos')) as [{ pos: string }[]];
    const deadline = Date.now() + ms;
    for (;;) {
      const [[{ at }]] = (await this.query('replica', 'SELECT @@gtid_slave_pos AS at')) as [{ at: string }[]];
      if (sequence(at) >= sequence(pos)) return;
      if (Date.now() > deadline) throw new Error(`the replica did not catch up (${at} vs ${pos})`);
      await sleep(50);
    }
  }

  onPrimary(sql: string): Promise<unknown> {
    return this.query('primary', sql);
  }

  onReplica(sql: string): Promise<unknown> {
    return this.query('replica', sql);
  }

  async stop(): Promise<void> {
    for (const server of [this.replica, this.primary]) {
      const child = server.process;
      server.process = undefined;
      if (!child || child.exitCode !== null) continue;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.root, { recursive: true, force: true });
  }

  private async query(which: 'primary' | 'replica', sql: string): Promise<unknown> {
    const connection: Connection = await createConnection({ uri: this.url(which), connectTimeout: 5000 });
    try {
      return await connection.query(sql);
    } finally {
      await connection.end();
    }
  }

  private async launch(server: Server, extra: string[]): Promise<void> {
    server.process = spawn(
      this.daemon,
      [
        '--no-defaults',
        '--user=root',
        `--datadir=${server.dir}`,
        `--socket=${join(server.dir, 'mysqld.sock')}`,
        `--pid-file=${join(server.dir, 'mysqld.pid')}`,
        `--log-error=${join(server.dir, 'error.log')}`,
        `--port=${server.port}`,
        '--bind-address=127.0.0.1',
        '--skip-name-resolve',
        '--innodb-buffer-pool-size=64M',
        '--max-connections=200',
        ...extra,
      ],
      { stdio: 'ignore' },
    );
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (server.process.exitCode !== null) {
        throw new Error(`mariadbd exited: ${readFileSync(join(server.dir, 'error.log'), 'utf8').slice(-2000)}`);
      }
      const up = await createConnection({ uri: `mysql://root@127.0.0.1:${server.port}`, connectTimeout: 1000 }).then(
        async (connection) => {
          await connection.end();
          return true;
        },
        () => false,
      );
      if (up) return;
      if (Date.now() > deadline) throw new Error(`mariadbd did not answer on port ${server.port}`);
      await sleep(100);
    }
  }
}

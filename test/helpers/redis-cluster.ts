import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

/**
 * A private three-master Redis Cluster for tests (no replicas, nothing kept on disk), on free
 * ports of 127.0.0.1, from the machine's redis-server and redis-cli: the shared Redis other
 * suites use is never touched. Without the binaries the tests are skipped with a loud warning,
 * except under CI=true, where they fail. `stop` always removes what it started.
 */
export class RedisCluster {
  private readonly processes = new Map<number, ChildProcess>();

  private constructor(
    readonly ports: readonly number[],
    private readonly dir: string,
  ) {}

  /** A new cluster, formed and ready; undefined (skipped) when this machine has no Redis binaries. */
  static async start(what: string): Promise<RedisCluster | undefined> {
    if (spawnSync('redis-server', ['--version']).status !== 0 || spawnSync('redis-cli', ['--version']).status !== 0) {
      const message = 'no redis-server / redis-cli to start a private Redis Cluster';
      if (process.env.CI === 'true') throw new Error(`${message}: ${what} required when CI=true`);
      process.stderr.write(`\n*** ${message}: ${what} SKIPPED ***\n`);
      return undefined;
    }
    const ports: number[] = [];
    while (ports.length < 3) {
      const port = await clusterPort();
      if (!ports.includes(port)) ports.push(port);
    }
    const cluster = new RedisCluster(ports, mkdtempSync(join(tmpdir(), 'registry-redis-cluster-')));
    try {
      for (const port of ports) await cluster.startNode(port);
      const created = spawnSync(
        'redis-cli',
        ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '0', '--cluster-yes'],
        { encoding: 'utf8', timeout: 30_000 },
      );
      if (created.status !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
      await cluster.ready();
      return cluster;
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  /** REDIS_CLUSTER_NODES for the app. */
  get nodes(): string {
    return this.ports.map((port) => `127.0.0.1:${port}`).join(',');
  }

  private async startNode(port: number): Promise<void> {
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--dir',
        this.dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--loglevel',
        'warning',
      ],
      { stdio: 'ignore' },
    );
    this.processes.set(port, child);
    await waitFor(`redis-server on port ${port}`, async () => (await command(port, ['PING'])) === 'PONG');
  }

  /** Waits until every node says the cluster is ok (all slots served). */
  private async ready(): Promise<void> {
    await waitFor('the Redis Cluster', async () => {
      for (const port of this.ports) {
        const info = await command(port, ['CLUSTER', 'INFO']);
        if (typeof info !== 'string' || !info.includes('cluster_state:ok')) return false;
      }
      return true;
    });
  }

  /** Kills a master as a crash would (SIGKILL) and waits until it is gone. */
  async kill(port: number): Promise<void> {
    const child = this.processes.get(port);
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  /** Starts killed masters again on their ports with their node files: they rejoin with their slots. */
  async revive(ports: readonly number[]): Promise<void> {
    for (const port of ports) await this.startNode(port);
    await this.ready();
  }

  async stop(): Promise<void> {
    for (const child of this.processes.values()) {
      if (child.exitCode !== null) continue;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
    this.processes.clear();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** One command to one node over a connection of its own; undefined when the node does not answer. */
async function command(port: number, args: [string, ...string[]]): Promise<unknown> {
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    await probe.connect();
    return await probe.call(...args);
  } catch {
    return undefined;
  } finally {
    probe.disconnect();
  }
}

async function waitFor(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not come up within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A free port whose cluster bus port (+10000) is free too. */
async function clusterPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 25_000);
    if ((await isFree(port)) && (await isFree(port + 10_000))) return port;
  }
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

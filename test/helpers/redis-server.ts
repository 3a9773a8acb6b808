import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { freePort } from './ports';
import { Redis } from 'ioredis';

/**
 * A private redis-server for tests that kill and restart Redis: started on a free port of
 * 127.0.0.1, keeping nothing on disk, so the shared Redis other suites use is never touched.
 * Without the redis-server binary such tests are skipped with a loud warning, except under
 * CI=true, where they fail.
 */
export class RedisServer {
  private process: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly binary: string,
  ) {}

  /** A new server, started; undefined (skipped) when there is no redis-server here. */
  static async start(what: string): Promise<RedisServer | undefined> {
    const binary = process.env.REDIS_SERVER_BIN ?? 'redis-server';
    if (spawnSync(binary, ['--version']).status !== 0) {
      const message = `no ${binary} to start a private Redis`;
      if (process.env.CI === 'true') throw new Error(`${message}: ${what} required when CI=true`);
      process.stderr.write(`\n*** ${message}: ${what} SKIPPED ***\n`);
      return undefined;
    }
    const server = new RedisServer(await freePort(), binary);
    await server.restart();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts the server (again, on the same port) and waits until it answers PING. */
  async restart(): Promise<void> {
    if (this.process) throw new Error('redis-server is already running');
    this.process = spawn(
      this.binary,
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'no',
        '--loglevel',
        'warning',
      ],
      { stdio: 'ignore' },
    );
    const deadline = Date.now() + 10_000;
    for (;;) {
      const probe = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      const up = await probe.connect().then(
        () => probe.ping().then(() => true),
        () => false,
      );
      probe.disconnect();
      if (up) return;
      if (Date.now() > deadline) throw new Error(`redis-server did not answer on port ${this.port}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Kills the server as a crash would (SIGKILL) and waits until it is gone. */
  async kill(): Promise<void> {
    const child = this.process;
    this.process = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}

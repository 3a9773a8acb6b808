import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../helpers/ports';

const root = join(__dirname, '..', '..');

/** Starts src/main.ts as an operator would (through ts-node, so no build is needed). */
function start(env: Record<string, string>) {
  return spawnSync(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
}

describe('starting the service with bad configuration', () => {
  it('exits 1 with one line naming the variable', () => {
    const result = start({ PORT: 'abc' });
    expect(result.status).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^Invalid configuration: PORT /)]);
  });

  it('exits 1 with one line naming the manifest and the document when a trusted document does not validate', () => {
    const dir = mkdtempSync(join(tmpdir(), 'registry-manifest-'));
    const file = join(dir, 'persisted-documents.json');
    const bad = 'query Bad { trainer(id: "1") { secret } }';
    const hash = createHash('sha256').update(bad).digest('hex');
    writeFileSync(file, JSON.stringify({ [`sha256:${hash}`]: bad }));
    const result = start({
      NODE_ENV: 'production',
      JWT_SECRET: 'm'.repeat(40),
      DATABASE_URL: `sqlite:${join(dir, 'r.sqlite')}`,
      TRUSTED_DOCUMENTS: file,
      LOG_LEVEL: 'silent',
    });
    expect(result.status).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([
      `Invalid configuration: TRUSTED_DOCUMENTS ${file} document ${hash} does not validate against the schema: Cannot query field "secret" on type "Trainer".`,
    ]);
  });

  it('exits 1 in production without JWT_SECRET', () => {
    const result = start({ NODE_ENV: 'production', DATABASE_URL: 'sqlite::memory:' });
    expect(result.status).toBe(1);
    expect(result.stderr.trim()).toMatch(/^Invalid configuration: JWT_SECRET is required in production/);
  });
});

describe('WORKERS=2', () => {
  it('serves from two worker processes on one port and stops them all on SIGTERM', async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'registry-workers-'));
    const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        PORT: String(port),
        HOST: '127.0.0.1',
        WORKERS: '2',
        DATABASE_URL: `sqlite:${join(dir, 'r.sqlite')}`,
        JWT_SECRET: 'w'.repeat(40),
        LOG_LEVEL: 'warn',
      },
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    // What the processes said, for a failure's message.
    const said: string[] = [];
    child.stdout?.on('data', (chunk: Buffer) => said.push(chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => said.push(chunk.toString()));
    const ready = () =>
      fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.status,
        () => 0,
      );
    // Ready means every worker answers 200: the primary hands connections to the workers in
    // turn, and the second may still be migrating when the first is ready. Three processes
    // compile the TypeScript at once (ts-node): on a slow 2-core CI machine that alone took
    // most of a 40 s wait.
    const deadline = Date.now() + 75_000;
    let inARow = 0;
    try {
      while (inARow < 6 && Date.now() < deadline) {
        inARow = (await ready()) === 200 ? inARow + 1 : 0;
        if (inARow === 0) await new Promise((r) => setTimeout(r, 200));
      }
      if (inARow < 6) throw new Error(`the workers were not all ready within 75 s; they said:\n${said.join('').slice(-4000)}`);
      const workers = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/);
      expect(workers).toHaveLength(2);
      child.kill('SIGTERM');
      // With what the processes said, should one of them not stop cleanly.
      expect({ code: await exited, said: said.join('').slice(-4000) }).toEqual({ code: 0, said: expect.any(String) });
    } finally {
      // A failure above must not leave the primary and its workers running (Jest would wait on them for ever).
      if (child.exitCode === null && child.signalCode === null) {
        for (const pid of readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)) {
          try {
            process.kill(Number(pid), 'SIGKILL');
          } catch {
            // gone already
          }
        }
        child.kill('SIGKILL');
      }
    }
  }, 100_000);
});

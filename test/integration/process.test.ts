import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

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

  it('exits 1 in production without JWT_SECRET', () => {
    const result = start({ NODE_ENV: 'production', DATABASE_URL: 'sqlite::memory:' });
    expect(result.status).toBe(1);
    expect(result.stderr.trim()).toMatch(/^Invalid configuration: JWT_SECRET is required in production/);
  });
});

import { readFileSync } from 'node:fs';
import { createConnection } from 'mysql2/promise';
import { cpuMs, databaseProcess, memory } from './proc';

// What the bench reads of its processes from /proc: its own CPU and memory, and the MariaDB server's process.
const MYSQL_URL = process.env.BENCH_DATABASE_URL ?? 'mysql://root@127.0.0.1:3306/mysql';

async function mysqlReachable(): Promise<boolean> {
  try {
    await (await createConnection({ uri: MYSQL_URL, connectTimeout: 2000 })).end();
    return true;
  } catch (error) {
    if (process.env.CI === 'true') throw new Error(`MySQL at ${MYSQL_URL} is required when CI=true`, { cause: error });
    return false;
  }
}

describe('bench/proc', () => {
  it('reads the CPU time a process has used, growing with its work, and its memory', () => {
    const before = cpuMs(process.pid)!;
    const until = Date.now() + 200;
    while (Date.now() < until) Math.sqrt(Math.random());
    const after = cpuMs(process.pid)!;
    expect(after - before).toBeGreaterThanOrEqual(100);
    expect(cpuMs(2 ** 22 + 1)).toBeUndefined();
    expect(memory(process.pid).rssMb).toBeGreaterThan(0);
  });

  it('finds no database server behind a SQLite URL', async () => {
    await expect(databaseProcess('sqlite:data/x.sqlite', () => undefined)).resolves.toBeUndefined();
  });

  it('finds the MariaDB/MySQL server of this machine by its pid file, with its idle CPU rate', async () => {
    if (!(await mysqlReachable())) return;
    const lines: string[] = [];
    const found = await databaseProcess(MYSQL_URL, (line) => lines.push(line));
    expect(found).toBeDefined();
    expect(['mariadbd', 'mysqld']).toContain(readFileSync(`/proc/${found!.pid}/comm`, 'utf8').trim());
    expect(found!.idleMsPerSecond).toBeGreaterThanOrEqual(0);
    expect(lines.join('\n')).toContain(`pid ${found!.pid}`);
  });
});

// What the bench reads of its processes from /proc (Linux): memory, CPU time, the database server's process.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createConnection } from 'mysql2/promise';

/** A process and its children (cluster workers). */
function processTree(pid: number): number[] {
  try {
    return [pid, ...readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)];
  } catch {
    return [pid];
  }
}

/** Peak and current resident memory of a process and its children (cluster workers). */
export function memory(pid: number): { peakMb: number; rssMb: number } {
  let peak = 0;
  let rss = 0;
  for (const p of processTree(pid)) {
    try {
      const status = readFileSync(`/proc/${p}/status`, 'utf8');
      peak += Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
      rss += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    } catch {
      // process gone
    }
  }
  return { peakMb: Math.round(peak / 1024), rssMb: Math.round(rss / 1024) };
}

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ). */
const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses). */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/**
 * CPU time, user and system, that a process and its children (cluster workers) have used so far,
 * in ms; undefined where /proc does not show the process (another machine, not Linux). A worker
 * that exits is no longer counted: read it around runs during which none exits.
 */
export function cpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  let ticks = 0;
  for (const p of processTree(pid)) {
    try {
      // utime and stime: fields 14 and 15 of the line, the 12th and 13th after the command name.
      const fields = statFields(p);
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      if (p === pid) return undefined;
    }
  }
  return (ticks * 1000) / CLOCK_TICKS;
}

export interface DatabaseProcess {
  readonly pid: number;
  /** CPU ms a second it spends with no request to answer (its background work, the bench's other instances' probes). */
  readonly idleMsPerSecond: number;
}

const DATABASE_SERVERS = new Set(['mariadbd', 'mysqld']);
const IDLE_SAMPLE_MS = 2000;

/**
 * The MySQL/MariaDB server behind `url` when it runs on this machine: the process its pid file
 * names, if that file is readable here and the process is a mariadbd or mysqld, with its idle CPU
 * rate sampled now (call it while nothing is sent). Undefined for SQLite (inside the service's own
 * process) and for a server elsewhere, said once through `log`.
 */
export async function databaseProcess(url: string, log: (line: string) => void): Promise<DatabaseProcess | undefined> {
  if (!url.startsWith('mysql:')) return undefined;
  const connection = await createConnection({ uri: url });
  let pid: number | undefined;
  try {
    const [rows] = await connection.query('SELECT @@pid_file AS file');
    const file = (rows as { file: string | null }[])[0]?.file;
    const named = file ? Number(readFileSync(file, 'utf8').trim()) : NaN;
    if (DATABASE_SERVERS.has(readFileSync(`/proc/${named}/comm`, 'utf8').trim())) pid = named;
  } catch {
    pid = undefined;
  } finally {
    await connection.end();
  }
  const before = cpuMs(pid);
  if (pid === undefined || before === undefined) {
    log('the database server is not a process of this machine whose pid file can be read: no database CPU per request');
    return undefined;
  }
  await new Promise((resolveSleep) => setTimeout(resolveSleep, IDLE_SAMPLE_MS));
  const idleMsPerSecond = (((cpuMs(pid) ?? before) - before) * 1000) / IDLE_SAMPLE_MS;
  log(`database server: pid ${pid}, ${idleMsPerSecond.toFixed(1)} ms of CPU a second while idle (left out of its CPU per request)`);
  return { pid, idleMsPerSecond };
}

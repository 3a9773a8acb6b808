import { createConnection, type Connection, type RowDataPacket } from 'mysql2/promise';
import { mysqlServerUrl } from './mysql';

/** Test databases are named registry_test_<pid>_<random>: drop those whose run is no longer alive. */
async function dropAbandonedDatabases(connection: Connection): Promise<void> {
  const [rows] = await connection.query<RowDataPacket[]>("SHOW DATABASES LIKE 'registry\\_test\\_%'");
  for (const row of rows) {
    const name = String(Object.values(row)[0]);
    const pid = Number(/^registry_test_(\d+)_/.exec(name)?.[1]);
    if (!pid || isAlive(pid)) continue;
    await connection.query(`DROP DATABASE IF EXISTS \`${name}\``);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Decides once whether the MySQL half of every suite runs. With CI=true an unreachable MySQL
 * fails the whole run; elsewhere it is skipped with a loud warning, never silently.
 */
export default async function globalSetup(): Promise<void> {
  const url = mysqlServerUrl();
  try {
    const connection = await createConnection({ uri: url, connectTimeout: 5000 });
    await dropAbandonedDatabases(connection);
    await connection.end();
    process.env.REGISTRY_TEST_MYSQL = 'on';
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (process.env.CI === 'true') {
      throw new Error(`MySQL is required when CI=true but ${url.replace(/\/\/[^@]*@/, '//***@')} is unreachable: ${reason}`, {
        cause: error,
      });
    }
    process.env.REGISTRY_TEST_MYSQL = 'off';
    process.stderr.write(
      `\n*** MySQL unreachable (${reason}): the MySQL half of every suite is SKIPPED. Set MYSQL_TEST_URL or start MariaDB. ***\n\n`,
    );
  }
}

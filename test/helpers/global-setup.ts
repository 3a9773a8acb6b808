import { createConnection } from 'mysql2/promise';
import { mysqlServerUrl } from './mysql';

/**
 * Decides once whether the MySQL half of every suite runs. With CI=true an unreachable MySQL
 * fails the whole run; elsewhere it is skipped with a loud warning, never silently.
 */
export default async function globalSetup(): Promise<void> {
  const url = mysqlServerUrl();
  try {
    const connection = await createConnection({ uri: url, connectTimeout: 5000 });
    await connection.query('SELECT 1');
    await connection.end();
    process.env.REGISTRY_TEST_MYSQL = 'on';
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (process.env.CI === 'true') {
      throw new Error(`MySQL is required when CI=true but ${url.replace(/\/\/[^@]*@/, '//***@')} is unreachable: ${reason}`);
    }
    process.env.REGISTRY_TEST_MYSQL = 'off';
    process.stderr.write(
      `\n*** MySQL unreachable (${reason}): the MySQL half of every suite is SKIPPED. Set MYSQL_TEST_URL or start MariaDB. ***\n\n`,
    );
  }
}

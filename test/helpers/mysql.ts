/** Server URL (no database) for the test databases; MYSQL_TEST_URL overrides the local default. */
export function mysqlServerUrl(): string {
  return (process.env.MYSQL_TEST_URL ?? 'mysql://root@127.0.0.1:3306').replace(/\/+$/, '');
}

import globalSetup from '../helpers/global-setup';

describe('the test run’s MySQL check', () => {
  const saved = { CI: process.env.CI, MYSQL_TEST_URL: process.env.MYSQL_TEST_URL, REGISTRY_TEST_MYSQL: process.env.REGISTRY_TEST_MYSQL };
  afterEach(() => {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  });

  it('fails the whole run when CI=true and MySQL cannot be reached', async () => {
    process.env.CI = 'true';
    process.env.MYSQL_TEST_URL = 'mysql://root@127.0.0.1:1';
    await expect(globalSetup()).rejects.toThrow(/MySQL is required when CI=true/);
  });

  it('skips the MySQL half loudly, not silently, elsewhere', async () => {
    process.env.CI = 'false';
    process.env.MYSQL_TEST_URL = 'mysql://root@127.0.0.1:1';
    const written: string[] = [];
    const spy = jest.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    try {
      await globalSetup();
    } finally {
      spy.mockRestore();
    }
    expect(process.env.REGISTRY_TEST_MYSQL).toBe('off');
    expect(written.join('')).toMatch(/MySQL half of every suite is SKIPPED/);
  });
});

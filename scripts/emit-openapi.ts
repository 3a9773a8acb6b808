// `npm run openapi`: writes openapi.json from the REST routes' schemas. It refuses a breaking
// change that docs/api-changes.md does not record; the test suite fails when the committed file
// differs from what the code generates.
import 'reflect-metadata';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import { openApiBreakingChanges, refuseUnrecorded, ROOT } from './api-changes';

export async function generateOpenApi(): Promise<string> {
  const config = loadConfig({ DATABASE_URL: 'sqlite::memory:', JWT_SECRET: 'x'.repeat(32), LOG_LEVEL: 'silent' });
  const app = await buildApp(config);
  try {
    return `${JSON.stringify(app.swagger(), null, 2)}\n`;
  } finally {
    await app.close();
  }
}

if (require.main === module) {
  generateOpenApi()
    .then((text) => {
      const target = join(ROOT, 'openapi.json');
      if (existsSync(target)) {
        refuseUnrecorded(
          'openapi.json',
          openApiBreakingChanges(
            JSON.parse(readFileSync(target, 'utf8')) as Record<string, unknown>,
            JSON.parse(text) as Record<string, unknown>,
          ),
        );
      }
      writeFileSync(target, text);
      process.stdout.write(`wrote ${target}\n`);
    })
    .catch((error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    });
}

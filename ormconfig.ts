// Entry point for the TypeORM CLI only (`npm run migration:run`, `migration:generate`):
// the app builds its own DataSource from the validated config.
import 'reflect-metadata';
import { loadDatabaseConfig } from './src/config';
import { createDataSource } from './src/db/data-source';

export default createDataSource(loadDatabaseConfig(process.env));

// `npm run seed`: a few demo trainers and creatures, so Sandbox has data to explore.
// Safe to run again: existing demo trainers and creatures are left as they are.
import 'reflect-metadata';
import { loadConfig } from '../src/config';
import { createDataSource } from '../src/db/data-source';
import { runMigrations } from '../src/db/migrate';
import { AppError } from '../src/errors';
import { createServices } from '../src/services';
import { Team } from '../src/trainers/team';
import type { Trainer } from '../src/trainers/trainer.entity';

const DEMO_PASSWORD = 'demo-password-1';

const DEMO = [
  {
    trainer: { nickname: 'ash', firstName: 'Ash', lastName: 'Ketchum', email: 'ash@demo.test', team: Team.VALOR },
    creatures: [
      { name: 'Pikachu', speciesId: 25, level: 35 },
      { name: 'Charizard', speciesId: 6, level: 52 },
      { name: 'Bulbasaur', speciesId: 1, level: 20 },
    ],
  },
  {
    trainer: { nickname: 'misty', firstName: 'Misty', lastName: 'Waterflower', email: 'misty@demo.test', team: Team.MYSTIC },
    creatures: [
      { name: 'Starmie', speciesId: 121, level: 40 },
      { name: 'Psyduck', speciesId: 54, level: 18 },
    ],
  },
  {
    trainer: { nickname: 'brock', firstName: 'Brock', lastName: 'Harrison', email: 'brock@demo.test', team: Team.INSTINCT },
    creatures: [{ name: 'Onix', speciesId: 95, level: 38 }],
  },
];

function ignoreExisting(error: unknown): null {
  if (error instanceof AppError && (error.code === 'TRAINER_ALREADY_EXISTS' || error.code === 'DUPLICATE_CREATURE')) return null;
  throw error;
}

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const dataSource = createDataSource(config.database);
  await dataSource.initialize();
  try {
    await runMigrations(dataSource);
    const services = createServices(dataSource, config);
    for (const demo of DEMO) {
      const created = await services.trainers.register({ ...demo.trainer, password: DEMO_PASSWORD }).catch(ignoreExisting);
      const existing = created ? null : await services.trainers.credentials(demo.trainer.email);
      const trainer: Trainer | null = created ?? (existing ? await services.trainers.findById(existing.id) : null);
      if (!trainer) {
        process.stdout.write(`Skipped ${demo.trainer.nickname}: that nickname belongs to another account.\n`);
        continue;
      }
      for (const creature of demo.creatures) {
        await services.creatures.create(trainer, trainer.id, creature).catch(ignoreExisting);
      }
    }
    const where = config.database.type === 'sqlite' ? config.database.path : 'MySQL';
    process.stdout.write(
      `Seeded ${DEMO.length} demo trainers into ${where}.\n` + `Demo login: email ${DEMO[0].trainer.email}, password ${DEMO_PASSWORD}\n`,
    );
  } finally {
    await dataSource.destroy();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`Seeding failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});

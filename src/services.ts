import type { DataSource } from 'typeorm';
import { AuthService } from './auth/auth.service';
import { TokenIssuer } from './auth/jwt';
import type { Config } from './config';
import { CreatureService } from './creatures/creature.service';
import { TrainerService } from './trainers/trainer.service';

/** The service layer both transports call. Built once per app; no module-level state. */
export interface Services {
  readonly trainers: TrainerService;
  readonly creatures: CreatureService;
  readonly auth: AuthService;
}

export function createServices(dataSource: DataSource, config: Config): Services {
  const trainers = new TrainerService(dataSource);
  const creatures = new CreatureService(dataSource);
  const auth = new AuthService(trainers, new TokenIssuer(config.jwtSecret, config.jwtTtlSeconds));
  return { trainers, creatures, auth };
}

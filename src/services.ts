import type { Redis } from 'ioredis';
import type { DataSource } from 'typeorm';
import { AuthService } from './auth/auth.service';
import { TokenIssuer } from './auth/jwt';
import { LoginThrottle } from './auth/login-throttle';
import type { Config } from './config';
import { CreatureService } from './creatures/creature.service';
import { TrainerService } from './trainers/trainer.service';

/** The service layer both transports call. Built once per app; no module-level state. */
export interface Services {
  readonly trainers: TrainerService;
  readonly creatures: CreatureService;
  readonly auth: AuthService;
}

/** @param redis shared rate-limit counters, when several instances run (REDIS_URL) */
export function createServices(dataSource: DataSource, config: Config, redis?: Redis): Services {
  const trainers = new TrainerService(dataSource);
  const creatures = new CreatureService(dataSource);
  const throttle = new LoginThrottle({
    maxFailures: config.loginMaxFailures,
    windowSeconds: config.loginWindowSeconds,
    ipPerMinute: config.loginIpPerMinute,
    redis,
  });
  const auth = new AuthService(trainers, new TokenIssuer(config.jwtSecret, config.jwtTtlSeconds), throttle);
  return { trainers, creatures, auth };
}

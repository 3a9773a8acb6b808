import type { Creature } from '../creatures/creature.entity';
import type { Team } from '../trainers/team';
import { AppError } from '../errors';
import type { Trainer } from '../trainers/trainer.entity';
import { CONDITION_NAMES, type TrainerConditions } from '../trainers/trainer-filter';
import { visibleEmail } from '../trainers/trainer.service';
import { paths } from './paths';

/*
 * How the REST shim shows the services' objects: plain objects with the properties of the
 * response schemas (schemas.ts), which Fastify's serializer writes out. Which properties a
 * reader may see is decided by the services' rules (visibleEmail); only the shape is decided here.
 */

/**
 * A trainer as a REST reader sees it: its creature count (0 when it was not read, as for a new
 * trainer), and its email only when the answer speaks to that trainer (absent otherwise).
 */
export interface TrainerJson {
  readonly id: number;
  readonly nickname: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly email?: string;
  readonly team: Team;
  readonly creaturesOwned: number;
  readonly createdAt: Date;
}

/** A page of trainers as GET /trainer sends it (trainerPageSchema). */
export interface TrainerPageJson {
  readonly items: TrainerJson[];
  readonly totalCount: number;
  readonly limit: number;
  readonly offset: number;
  readonly nextCursor: string | null;
}

/**
 * `trainer` as the answer to `readerId` shows it (see TrainerJson): one object per trainer, the
 * only one a list makes for each.
 */
export function presentTrainer(trainer: Trainer, readerId: number): TrainerJson {
  return {
    id: trainer.id,
    nickname: trainer.nickname,
    firstName: trainer.firstName,
    lastName: trainer.lastName,
    email: visibleEmail(trainer, readerId) ?? undefined,
    team: trainer.team,
    creaturesOwned: trainer.creaturesOwned ?? 0,
    createdAt: trainer.createdAt,
  };
}

/** A trainer read for `readerId` (presentTrainer), or NOT_FOUND when there is none with that id (GraphQL answers null). */
export function presentFoundTrainer(trainer: Trainer | null, id: number, readerId: number): TrainerJson {
  if (!trainer) throw new AppError('NOT_FOUND', `No trainer with id ${id}`);
  return presentTrainer(trainer, readerId);
}

/** A page of trainers (TrainerService.pageWithCount) as GET /trainer sends it to `readerId`. */
export function presentTrainerPage(
  page: { readonly items: readonly Trainer[]; readonly totalCount: number; readonly nextCursor: string | null },
  limit: number,
  offset: number,
  readerId: number,
): TrainerPageJson {
  const items = page.items.map((trainer) => presentTrainer(trainer, readerId));
  return { items, totalCount: page.totalCount, limit, offset, nextCursor: page.nextCursor };
}

/** REST creatures carry `trainerId` instead of a nested trainer. */
export function presentCreature(creature: Creature) {
  return {
    id: creature.id,
    name: creature.name,
    speciesId: creature.speciesId,
    level: creature.level,
    trainerId: creature.trainerId,
    createdAt: creature.createdAt,
  };
}

/** The Link header of a page of trainers that another follows (rel="next": the same conditions, after its cursor), or undefined. */
export function nextTrainersLink(page: TrainerPageJson, filter: TrainerConditions): string | undefined {
  if (page.nextCursor === null) return undefined;
  // A cursor is URL-safe already (base64url and a dot); filter values are encoded.
  let next = `limit=${page.limit}&after=${page.nextCursor}`;
  for (const name of CONDITION_NAMES) {
    const value = filter[name];
    if (value !== undefined) next += `&${name}=${encodeURIComponent(value)}`;
  }
  return `<${paths.trainers}?${next}>; rel="next"`;
}

import type { Creature } from '../creatures/creature.entity';
import { AppError } from '../errors';
import type { OwnProperty, ShownProperty } from '../trainers/trainer.columns';
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
 * A trainer as a REST reader sees it: every public column (TRAINER_COLUMNS) under its property's
 * name, its creature count 0 when it was not read (as for a new trainer), and what only the
 * trainer itself may see (its email) only when the answer speaks to that trainer (absent otherwise).
 */
export type TrainerJson = { readonly [P in ShownProperty]-?: NonNullable<Trainer[P]> } & {
  readonly [P in OwnProperty]?: NonNullable<Trainer[P]>;
};

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
  // A literal of one shape for every trainer (TrainerJson names every shown column, so a new
  // column fails the build here until it is added); the email is left undefined, which the
  // serializer leaves out, unless visibleEmail shows it.
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

/**
 * The Link header of a page that another follows (rel="next": `path` with the same limit and
 * conditions, after the page's cursor), or undefined when none follows.
 */
export function nextPageLink(
  path: string,
  page: { readonly limit: number; readonly nextCursor: string | null },
  conditions: Readonly<Record<string, string | undefined>> = {},
): string | undefined {
  if (page.nextCursor === null) return undefined;
  // A cursor is URL-safe already (base64url and a dot); condition values are encoded.
  let next = `limit=${page.limit}&after=${page.nextCursor}`;
  for (const [name, value] of Object.entries(conditions)) {
    if (value !== undefined) next += `&${name}=${encodeURIComponent(value)}`;
  }
  return `<${path}?${next}>; rel="next"`;
}

/** The Link header of a page of trainers (see nextPageLink), with its filter's conditions. */
export const nextTrainersLink = (page: TrainerPageJson, filter: TrainerConditions): string | undefined =>
  nextPageLink(paths.trainers, page, Object.fromEntries(CONDITION_NAMES.map((name) => [name, filter[name]])));

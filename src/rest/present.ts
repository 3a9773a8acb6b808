import type { Creature } from '../creatures/creature.entity';
import type { TrainerProfile } from '../trainers/trainer.service';

/**
 * The REST shape of a trainer: `email` is left out (not null) where the reader may not see it.
 * Undefined rather than spread in: the serializer writes no undefined property, and a list of 20
 * then makes no throwaway object per trainer.
 */
export function presentTrainer({ trainer, creaturesOwned, email }: TrainerProfile) {
  return {
    id: trainer.id,
    nickname: trainer.nickname,
    firstName: trainer.firstName,
    lastName: trainer.lastName,
    email: email ?? undefined,
    team: trainer.team,
    creaturesOwned,
    createdAt: trainer.createdAt,
  };
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

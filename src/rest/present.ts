import type { Creature } from '../creatures/creature.entity';
import type { Trainer } from '../trainers/trainer.entity';

/** The REST shape of a trainer; `email` only when the reader is that trainer. */
export function presentTrainer(trainer: Trainer, creaturesOwned: number, showEmail: boolean) {
  return {
    id: trainer.id,
    nickname: trainer.nickname,
    firstName: trainer.firstName,
    lastName: trainer.lastName,
    ...(showEmail ? { email: trainer.email } : {}),
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

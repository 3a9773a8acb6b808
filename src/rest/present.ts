import type { Creature } from '../creatures/creature.entity';

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

import { CreateTrainerAndCreature1795300000000 } from './1795300000000-CreateTrainerAndCreature';
import { AddTrainerIdIndex1795400000000 } from './1795400000000-AddTrainerIdIndex';
import { NameRules1795500000000 } from './1795500000000-NameRules';
import { Sessions1795600000000 } from './1795600000000-Sessions';
import { EventSequence1795700000000 } from './1795700000000-EventSequence';
import { CreatureCount1795800000000 } from './1795800000000-CreatureCount';
import { TrainerJson1795900000000 } from './1795900000000-TrainerJson';
import { RefreshReuseGrace1796000000000 } from './1796000000000-RefreshReuseGrace';
import { NameKeysWithoutSelectors1796100000000 } from './1796100000000-NameKeysWithoutSelectors';
import { BigIds1796200000000 } from './1796200000000-BigIds';
import { ListsByIndex1796300000000 } from './1796300000000-ListsByIndex';
import { CreaturePagesByIndex1796400000000 } from './1796400000000-CreaturePagesByIndex';
import { ReplicaHeartbeat1796500000000 } from './1796500000000-ReplicaHeartbeat';
import { CountSlots1796600000000 } from './1796600000000-CountSlots';
import { CreatureEvents1796700000000 } from './1796700000000-CreatureEvents';

/** Every migration, oldest first. Listed by hand so the build needs no file globbing. */
export const migrations = [
  CreateTrainerAndCreature1795300000000,
  AddTrainerIdIndex1795400000000,
  NameRules1795500000000,
  Sessions1795600000000,
  EventSequence1795700000000,
  CreatureCount1795800000000,
  TrainerJson1795900000000,
  RefreshReuseGrace1796000000000,
  NameKeysWithoutSelectors1796100000000,
  BigIds1796200000000,
  ListsByIndex1796300000000,
  CreaturePagesByIndex1796400000000,
  ReplicaHeartbeat1796500000000,
  CountSlots1796600000000,
  CreatureEvents1796700000000,
];

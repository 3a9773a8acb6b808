import { registerEnumType } from 'type-graphql';

export enum Team {
  VALOR = 'VALOR',
  INSTINCT = 'INSTINCT',
  MYSTIC = 'MYSTIC',
}

registerEnumType(Team, { name: 'Team', description: 'The team a trainer belongs to.' });

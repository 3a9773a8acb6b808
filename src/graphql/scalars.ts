import { GraphQLScalarType } from 'graphql';
import { DateTimeISOResolver } from 'graphql-scalars';

/** graphql-scalars' DateTimeISO, described as the contract describes it. */
export const DateTimeISO = new GraphQLScalarType({
  ...DateTimeISOResolver.toConfig(),
  description: 'An ISO-8601 date-time string in UTC, e.g. 2026-11-22T10:00:00.000Z.',
});

import { IsInt, IsOptional, Max, MaxLength, Min } from 'class-validator';
import { ArgsType, Field, ID, Int } from 'type-graphql';
import { DEFAULT_MAX_OFFSET } from '../config';
import { AppError } from '../errors';
import { IsEntityId } from './validation';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

/** How an offset's bound reads in the API documents: the server's MAX_OFFSET, whose default they name. */
export const OFFSET_RULE = `0 or more, at most the server's MAX_OFFSET (${DEFAULT_MAX_OFFSET} unless configured)`;

/** A page's size: 1..MAX_LIMIT. */
@ArgsType()
class LimitArgs {
  @Field(() => Int, { defaultValue: DEFAULT_LIMIT })
  @IsInt({ message: 'must be an integer' })
  @Min(1, { message: `must be between 1 and ${MAX_LIMIT}` })
  @Max(MAX_LIMIT, { message: `must be between 1 and ${MAX_LIMIT}` })
  limit: number = DEFAULT_LIMIT;
}

@ArgsType()
export class PageArgs extends LimitArgs {
  // The upper bound is the server's MAX_OFFSET, a setting: the services check it (checkOffset).
  @Field(() => Int, { defaultValue: 0, description: OFFSET_RULE })
  @IsInt({ message: 'must be an integer' })
  @Min(0, { message: 'must be 0 or more' })
  offset: number = 0;
}

/** The longest `after` either transport takes: far longer than any cursor this service gives, so a longer one is refused unread. */
export const MAX_CURSOR_LENGTH = 200;

/** A page from the start or after a cursor (`after`, a nextCursor), without an offset. */
@ArgsType()
export class CursorPageArgs extends LimitArgs {
  @Field(() => String, { nullable: true, description: 'A nextCursor from an earlier page: the page then holds what follows it.' })
  @IsOptional()
  @MaxLength(MAX_CURSOR_LENGTH, { message: 'is not a cursor this service gave' })
  after?: string | null;
}

@ArgsType()
export class IdArgs {
  @Field(() => ID)
  @IsEntityId()
  id!: string;
}

export interface Page<T> {
  readonly items: T[];
  readonly limit: number;
  readonly offset: number;
}

/**
 * BAD_USER_INPUT when `offset` is above `maxOffset` (MAX_OFFSET): a database skips every row
 * before a page, so deep offsets cost ever more. Lists go further by cursor (`after`), which the
 * message names.
 */
export function checkOffset(offset: number, maxOffset: number, list: 'trainers' | 'creatures'): void {
  if (offset <= maxOffset) return;
  const field = list === 'creatures' ? 'creaturePage' : 'trainers';
  throw new AppError(
    'BAD_USER_INPUT',
    `offset must be at most ${maxOffset}: to read further, follow nextCursor, passing it as after (${field} in GraphQL; a REST page also names the next page in its Link header, rel="next")`,
    [{ field: 'offset', message: `must be at most ${maxOffset}; follow nextCursor (after) instead` }],
  );
}

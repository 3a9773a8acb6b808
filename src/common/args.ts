import { IsInt, Max, Min } from 'class-validator';
import { ArgsType, Field, ID, Int } from 'type-graphql';
import { IsEntityId, MAX_ID } from './validation';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

@ArgsType()
export class PageArgs {
  @Field(() => Int, { defaultValue: DEFAULT_LIMIT })
  @IsInt({ message: 'must be an integer' })
  @Min(1, { message: `must be between 1 and ${MAX_LIMIT}` })
  @Max(MAX_LIMIT, { message: `must be between 1 and ${MAX_LIMIT}` })
  limit: number = DEFAULT_LIMIT;

  @Field(() => Int, { defaultValue: 0 })
  @IsInt({ message: 'must be an integer' })
  @Min(0, { message: `must be between 0 and ${MAX_ID}` })
  @Max(MAX_ID, { message: `must be between 0 and ${MAX_ID}` })
  offset: number = 0;
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

import { IsEnum, IsOptional, IsString, Matches, MaxLength, ValidateIf, ValidateNested } from 'class-validator';
import { ArgsType, Field, InputType } from 'type-graphql';
import { MAX_CURSOR_LENGTH, PageArgs } from '../common/args';
import { Team } from './team';

export const NICKNAME_PART_PATTERN = '^[A-Za-z0-9_.-]{2,32}$';
export const NICKNAME_PART_RULE = 'must be 2 to 32 characters of A-Z a-z 0-9 _ . -';

/** Conditions on trainers; every one given must hold. */
export interface TrainerConditions {
  readonly nickname?: string;
  readonly nicknameContains?: string;
  readonly team?: Team;
}

/** The search conditions, by name (GraphQL's TrainerFilter fields, GET /trainer's query parameters). */
export const CONDITION_NAMES = ['nickname', 'nicknameContains', 'team'] as const;

/**
 * Whether a condition's value states no condition: left out, null (`{ team: null }`, sent by
 * clients that write every key of a form), or empty (an empty search box, `?nickname=`).
 */
export const isNoCondition = (value: unknown): value is undefined | null | '' => value === undefined || value === null || value === '';

/** The conditions a GraphQL filter or GET /trainer's query parameters state (see isNoCondition). */
export function conditionsOf(
  filter: { readonly [K in keyof TrainerConditions]?: TrainerConditions[K] | null | '' } | null | undefined,
): TrainerConditions {
  const conditions: { -readonly [K in keyof TrainerConditions]: TrainerConditions[K] } = {};
  const { nickname, nicknameContains, team } = filter ?? {};
  if (!isNoCondition(nickname)) conditions.nickname = nickname;
  if (!isNoCondition(nicknameContains)) conditions.nicknameContains = nicknameContains;
  if (!isNoCondition(team)) conditions.team = team;
  return conditions;
}

@InputType({ description: 'Narrows trainers(...). Every given condition must hold.' })
export class TrainerFilter {
  @Field(() => String, {
    nullable: true,
    description:
      'Exactly this nickname, compared case-insensitively; one outside the nickname rules matches nobody; empty (like null) is no condition.',
  })
  @IsOptional()
  @IsString()
  nickname?: string | null;

  @Field(() => String, {
    nullable: true,
    description: 'Nicknames containing this text, compared case-insensitively; 2..32 characters; empty (like null) is no condition.',
  })
  @ValidateIf((filter: TrainerFilter) => !isNoCondition(filter.nicknameContains))
  @Matches(new RegExp(NICKNAME_PART_PATTERN), { message: NICKNAME_PART_RULE })
  nicknameContains?: string | null;

  @Field(() => Team, { nullable: true })
  @IsOptional()
  @IsEnum(Team, { message: 'must be VALOR, INSTINCT or MYSTIC' })
  team?: Team | null;
}

@ArgsType()
export class TrainersArgs extends PageArgs {
  @Field(() => String, {
    nullable: true,
    description: 'A nextCursor from an earlier page: the page then holds the matching trainers after it (offset must be 0).',
  })
  @IsOptional()
  @MaxLength(MAX_CURSOR_LENGTH, { message: 'is not a cursor this service gave' })
  after?: string | null;

  @Field(() => TrainerFilter, { nullable: true })
  @IsOptional()
  @ValidateNested()
  filter?: TrainerFilter | null;
}

/** Any text: a nickname outside the nickname rules finds nobody (TrainerService.findByNickname). */
@ArgsType()
export class NicknameArgs {
  @Field()
  @IsString()
  nickname!: string;
}

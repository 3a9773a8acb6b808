import { IsEnum, IsOptional, IsString, Matches, MaxLength, ValidateNested } from 'class-validator';
import { ArgsType, Field, InputType } from 'type-graphql';
import { PageArgs } from '../common/args';
import { Team } from './team';

export const NICKNAME_PART_PATTERN = '^[A-Za-z0-9_.-]{2,32}$';
export const NICKNAME_PART_RULE = 'must be 2 to 32 characters of A-Z a-z 0-9 _ . -';

/** Conditions on trainers; every one given must hold. */
export interface TrainerConditions {
  readonly nickname?: string;
  readonly nicknameContains?: string;
  readonly team?: Team;
}

@InputType({ description: 'Narrows trainers(...). Every given condition must hold.' })
export class TrainerFilter implements TrainerConditions {
  @Field({
    nullable: true,
    description: 'Exactly this nickname, compared case-insensitively; one outside the nickname rules matches nobody.',
  })
  @IsOptional()
  @IsString()
  nickname?: string;

  @Field({ nullable: true, description: 'Nicknames containing this text, compared case-insensitively; 2..32 characters.' })
  @IsOptional()
  @Matches(new RegExp(NICKNAME_PART_PATTERN), { message: NICKNAME_PART_RULE })
  nicknameContains?: string;

  @Field(() => Team, { nullable: true })
  @IsOptional()
  @IsEnum(Team, { message: 'must be VALOR, INSTINCT or MYSTIC' })
  team?: Team;
}

@ArgsType()
export class TrainersArgs extends PageArgs {
  @Field({
    nullable: true,
    description: 'A nextCursor from an earlier page: the page then holds the matching trainers after it (offset must be 0).',
  })
  @IsOptional()
  @MaxLength(200, { message: 'is not a cursor this service gave' })
  after?: string;

  @Field(() => TrainerFilter, { nullable: true })
  @IsOptional()
  @ValidateNested()
  filter?: TrainerFilter;
}

/** Any text: a nickname outside the nickname rules finds nobody (TrainerService.findByNickname). */
@ArgsType()
export class NicknameArgs {
  @Field()
  @IsString()
  nickname!: string;
}

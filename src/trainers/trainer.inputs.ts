import { IsEnum, IsString, Matches, ValidateIf, ValidateNested } from 'class-validator';
import { ArgsType, Field, InputType } from 'type-graphql';
import { NICKNAME_PATTERN } from '../common/rules';
import { IsEmailAddress, IsName, IsPassword, NICKNAME_RULE } from '../common/validation';
import { Team } from './team';
import { MAX_TRAINER_NAME } from './trainer.entity';

@InputType()
export class RegisterTrainerInput {
  @Field()
  @Matches(new RegExp(NICKNAME_PATTERN), { message: NICKNAME_RULE })
  nickname!: string;

  @Field()
  @IsName(MAX_TRAINER_NAME)
  firstName!: string;

  @Field()
  @IsName(MAX_TRAINER_NAME)
  lastName!: string;

  @Field()
  @IsEmailAddress()
  email!: string;

  @Field()
  @IsPassword()
  password!: string;

  @Field(() => Team)
  @IsEnum(Team, { message: 'must be VALOR, INSTINCT or MYSTIC' })
  team!: Team;
}

@ArgsType()
export class RegisterTrainerArgs {
  @Field(() => RegisterTrainerInput)
  @ValidateNested()
  input!: RegisterTrainerInput;
}

/**
 * What updateMe changes: each field left out stays as it is; at least one must be given
 * (AccountService.update). The rules are registration's; `null` is not a value any field can take.
 */
@InputType({ description: "What to change in the authenticated trainer's profile; at least one field." })
export class UpdateTrainerInput {
  @Field({ nullable: true })
  @ValidateIf((input: UpdateTrainerInput) => input.nickname !== undefined)
  @Matches(new RegExp(NICKNAME_PATTERN), { message: NICKNAME_RULE })
  nickname?: string;

  @Field({ nullable: true })
  @ValidateIf((input: UpdateTrainerInput) => input.firstName !== undefined)
  @IsName(MAX_TRAINER_NAME)
  firstName?: string;

  @Field({ nullable: true })
  @ValidateIf((input: UpdateTrainerInput) => input.lastName !== undefined)
  @IsName(MAX_TRAINER_NAME)
  lastName?: string;

  @Field(() => Team, { nullable: true })
  @ValidateIf((input: UpdateTrainerInput) => input.team !== undefined)
  @IsEnum(Team, { message: 'must be VALOR, INSTINCT or MYSTIC' })
  team?: Team;
}

@ArgsType()
export class UpdateMeArgs {
  @Field(() => UpdateTrainerInput)
  @ValidateNested()
  input!: UpdateTrainerInput;
}

@ArgsType()
export class ChangePasswordArgs {
  @Field()
  @IsString()
  currentPassword!: string;

  @Field()
  @IsPassword()
  newPassword!: string;
}

@ArgsType()
export class DeleteMeArgs {
  @Field()
  @IsString()
  password!: string;
}

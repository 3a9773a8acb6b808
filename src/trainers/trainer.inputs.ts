import { IsEnum, Matches, ValidateNested } from 'class-validator';
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

import { IsEnum, Matches, ValidateNested } from 'class-validator';
import { ArgsType, Field, InputType } from 'type-graphql';
import { IsEmailAddress, IsPassword, IsTrimmedText } from '../common/validation';
import { Team } from './team';

const NICKNAME_PATTERN = /^[A-Za-z0-9_.-]{3,32}$/;

@InputType()
export class RegisterTrainerInput {
  @Field()
  @Matches(NICKNAME_PATTERN, { message: 'must be 3 to 32 characters of A-Z a-z 0-9 _ . -' })
  nickname!: string;

  @Field()
  @IsTrimmedText(1, 64)
  firstName!: string;

  @Field()
  @IsTrimmedText(1, 64)
  lastName!: string;

  @Field()
  @IsEmailAddress(254)
  email!: string;

  @Field()
  @IsPassword(8, 128)
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

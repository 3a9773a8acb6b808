import { IsInt, Max, Min, ValidateIf, ValidateNested } from 'class-validator';
import { ArgsType, Field, ID, InputType, Int } from 'type-graphql';
import { IsEntityId, IsName } from '../common/validation';
import { MAX_CREATURE_NAME } from './creature.entity';

export const MAX_SPECIES_ID = 100000;
export const MAX_LEVEL = 100;

@InputType()
export class CreateCreatureInput {
  @Field()
  @IsName(MAX_CREATURE_NAME)
  name!: string;

  @Field(() => Int)
  @IsInt({ message: 'must be an integer' })
  @Min(1, { message: `must be between 1 and ${MAX_SPECIES_ID}` })
  @Max(MAX_SPECIES_ID, { message: `must be between 1 and ${MAX_SPECIES_ID}` })
  speciesId!: number;

  @Field(() => Int, { defaultValue: 1 })
  @IsInt({ message: 'must be an integer' })
  @Min(1, { message: `must be between 1 and ${MAX_LEVEL}` })
  @Max(MAX_LEVEL, { message: `must be between 1 and ${MAX_LEVEL}` })
  level: number = 1;
}

@ArgsType()
export class CreateCreatureArgs {
  @Field(() => ID)
  @IsEntityId()
  trainerId!: string;

  @Field(() => CreateCreatureInput)
  @ValidateNested()
  input!: CreateCreatureInput;
}

/**
 * What updateCreature changes: each field left out stays as it is; at least one must be given
 * (CreatureService.update). `null` is not a value either field can take.
 */
@InputType({ description: 'What to change; at least one field.' })
export class UpdateCreatureInput {
  @Field({ nullable: true })
  @ValidateIf((input: UpdateCreatureInput) => input.name !== undefined)
  @IsName(MAX_CREATURE_NAME)
  name?: string;

  @Field(() => Int, { nullable: true })
  @ValidateIf((input: UpdateCreatureInput) => input.level !== undefined)
  @IsInt({ message: 'must be an integer' })
  @Min(1, { message: `must be between 1 and ${MAX_LEVEL}` })
  @Max(MAX_LEVEL, { message: `must be between 1 and ${MAX_LEVEL}` })
  level?: number;
}

@ArgsType()
export class UpdateCreatureArgs {
  @Field(() => ID)
  @IsEntityId()
  id!: string;

  @Field(() => UpdateCreatureInput)
  @ValidateNested()
  input!: UpdateCreatureInput;
}

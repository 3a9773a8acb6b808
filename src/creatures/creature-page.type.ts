import { Field, ObjectType } from 'type-graphql';
import { Creature } from './creature.entity';

@ObjectType({ description: "A page of a trainer's creatures, oldest first.", simpleResolvers: true })
export class CreaturePage {
  @Field(() => [Creature])
  items!: Creature[];

  @Field(() => String, { nullable: true, description: 'Pass as `after` to get the page that follows; null when no creature follows.' })
  nextCursor!: string | null;
}

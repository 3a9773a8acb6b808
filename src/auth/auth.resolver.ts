import { IsString } from 'class-validator';
import { Args, ArgsType, Ctx, Field, Mutation, ObjectType, Resolver } from 'type-graphql';
import type { GraphQLContext } from '../graphql/context';
import { Trainer } from '../trainers/trainer.entity';

// simpleResolvers: every field only reads a property of the answer (no @Authorized field, no database
// access); `trainer` resolves through Trainer's own field resolvers, which keep their middlewares.
@ObjectType({ description: 'What a successful authentication returns.', simpleResolvers: true })
export class AuthPayload {
  @Field({ description: 'A JWT to send as `Authorization: Bearer <token>`.' })
  token!: string;

  @Field({ description: 'Always "Bearer".' })
  tokenType!: string;

  @Field()
  expiresAt!: Date;

  @Field(() => Trainer)
  trainer!: Trainer;
}

@ArgsType()
export class AuthenticateArgs {
  @Field()
  @IsString()
  email!: string;

  @Field()
  @IsString()
  password!: string;
}

@Resolver()
export class AuthResolver {
  @Mutation(() => AuthPayload, { description: 'Exchange email and password for a token. Needs no token.' })
  async authenticate(@Args() { email, password }: AuthenticateArgs, @Ctx() ctx: GraphQLContext): Promise<AuthPayload> {
    const result = await ctx.services.auth.authenticate(email, password, ctx.clientIp);
    ctx.selfIds.add(result.trainer.id);
    return result;
  }
}

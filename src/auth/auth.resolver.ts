import { IsBoolean, IsString } from 'class-validator';
import { Args, ArgsType, Authorized, Ctx, Field, Mutation, ObjectType, Resolver } from 'type-graphql';
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

  @Field({ description: 'Single-use token for refreshSession; valid until refreshExpiresAt.' })
  refreshToken!: string;

  @Field()
  refreshExpiresAt!: Date;

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

@ArgsType()
export class RefreshSessionArgs {
  @Field()
  @IsString()
  refreshToken!: string;
}

@ArgsType()
export class LogoutArgs {
  @Field({ defaultValue: false })
  @IsBoolean()
  everywhere: boolean = false;
}

@Resolver()
export class AuthResolver {
  @Mutation(() => AuthPayload, { description: 'Exchange email and password for a token. Needs no token.' })
  async authenticate(@Args() { email, password }: AuthenticateArgs, @Ctx() ctx: GraphQLContext): Promise<AuthPayload> {
    const result = await ctx.services.auth.authenticate(email, password, ctx.clientIp);
    ctx.selfIds.add(result.trainer.id);
    return result;
  }

  @Mutation(() => AuthPayload, { description: 'Exchange a refresh token for a new token pair. Needs no access token.' })
  async refreshSession(@Args() { refreshToken }: RefreshSessionArgs, @Ctx() ctx: GraphQLContext): Promise<AuthPayload> {
    const result = await ctx.services.auth.refresh(refreshToken, ctx.clientIp);
    ctx.selfIds.add(result.trainer.id);
    return result;
  }

  @Authorized()
  @Mutation(() => Boolean, { description: "End the caller's session (everywhere: every session of the trainer). Returns true." })
  async logout(@Args() { everywhere }: LogoutArgs, @Ctx() ctx: GraphQLContext): Promise<boolean> {
    await ctx.services.auth.logout(ctx.auth, everywhere);
    return true;
  }
}

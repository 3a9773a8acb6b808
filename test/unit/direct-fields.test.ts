import 'reflect-metadata';
import { graphql } from 'graphql';
import {
  Args,
  ArgsType,
  Authorized,
  buildSchema,
  Ctx,
  Field,
  FieldResolver,
  Int,
  ObjectType,
  Query,
  Resolver,
  Root,
  UseMiddleware,
} from 'type-graphql';
import { Min } from 'class-validator';
import { answerDirectly, checkArguments, withArguments } from '../../src/graphql/field-resolvers';

// A small schema of its own: answerDirectly must put the given functions in place of
// type-graphql's resolvers, check arguments as type-graphql does, and refuse fields whose
// declaration carries a rule only type-graphql's wrapper applies.

@ObjectType({ simpleResolvers: true })
class Box {
  @Field(() => Int)
  size!: number;
}

@ArgsType()
class TimesArgs {
  @Field(() => Int, { defaultValue: 2 })
  @Min(1, { message: 'must be 1 or more' })
  times: number = 2;
}

@Resolver(() => Box)
class BoxResolver {
  @Query(() => [Box])
  boxes(): Box[] {
    return [Object.assign(new Box(), { size: 1 }), Object.assign(new Box(), { size: 2 })];
  }

  @FieldResolver(() => Int)
  scaled(@Root() box: Box, @Args() { times }: TimesArgs, @Ctx() ctx: { factor: number }): number {
    return box.size * ctx.factor * times;
  }

  @Authorized()
  @FieldResolver(() => Int)
  secret(@Root() box: Box): number {
    return box.size;
  }

  @UseMiddleware(async (_data, next) => (await next()) as unknown)
  @FieldResolver(() => Int)
  wrapped(@Root() box: Box): number {
    return box.size;
  }
}

const build = () => buildSchema({ resolvers: [BoxResolver], authChecker: () => true, validateFn: (value) => checkArguments(value) });

/** Box.scaled answered by a function of its own that counts its calls. */
async function directSchema() {
  const schema = await build();
  const resolver = new BoxResolver();
  const calls = { count: 0 };
  answerDirectly<Box>(schema, 'Box', BoxResolver, {
    scaled: (box, args, ctx) => {
      calls.count += 1;
      return withArguments(TimesArgs, args, (checked) => resolver.scaled(box, checked, ctx as never));
    },
  });
  return { schema, calls };
}

describe('answerDirectly', () => {
  it('answers a field with the given function, with the arguments as type-graphql gives them', async () => {
    const { schema, calls } = await directSchema();
    const answer = await graphql({ schema, source: '{ boxes { size scaled(times: 3) } }', contextValue: { factor: 10 } });
    expect(answer.errors).toBeUndefined();
    expect(answer.data).toEqual({
      boxes: [
        { size: 1, scaled: 30 },
        { size: 2, scaled: 60 },
      ],
    });
    expect(calls.count).toBe(2);
    // The argument's default, as graphql-js fills it in.
    const defaulted = await graphql({ schema, source: '{ boxes { scaled } }', contextValue: { factor: 1 } });
    expect(defaulted.data).toEqual({ boxes: [{ scaled: 2 }, { scaled: 4 }] });
  });

  it('refuses arguments that break the argument class rules with BAD_USER_INPUT, at the field', async () => {
    const { schema } = await directSchema();
    const answer = await graphql({ schema, source: '{ boxes { scaled(times: 0) } }', contextValue: { factor: 1 } });
    expect(answer.errors?.[0]?.path).toEqual(['boxes', 0, 'scaled']);
    expect(answer.errors?.[0]?.originalError).toMatchObject({ code: 'BAD_USER_INPUT' });
    expect(answer.data).toBeNull();
  });

  it('refuses a field with @Authorized or @UseMiddleware, and one the class does not declare', async () => {
    const schema = await build();
    expect(() => answerDirectly(schema, 'Box', BoxResolver, { secret: () => 1 })).toThrow(/@Authorized or @UseMiddleware/);
    expect(() => answerDirectly(schema, 'Box', BoxResolver, { wrapped: () => 1 })).toThrow(/@Authorized or @UseMiddleware/);
    expect(() => answerDirectly(schema, 'Box', BoxResolver, { size: () => 1 })).toThrow(/declares no field Box.size/);
    expect(() => answerDirectly(schema, 'Crate', BoxResolver, { scaled: () => 1 })).toThrow(/no object type Crate/);
  });
});

import { buildSubgraphSchema } from '@apollo/subgraph';
import {
  execute,
  Kind,
  parse,
  printSchema,
  visit,
  type ConstDirectiveNode,
  type GraphQLFieldResolver,
  type GraphQLResolveInfo,
  type GraphQLSchema,
} from 'graphql';
import { createResolversMap } from 'type-graphql';
import { parseId } from '../common/validation';
import { AppError } from '../errors';
import type { GraphQLContext } from './context';
import { selectsField } from './selection';

/** The Federation version the subgraph links to (what `@apollo/subgraph` 2.14 and its routers speak). */
const FEDERATION_URL = 'https://specs.apollo.dev/federation/v2.7';

/**
 * The entities other subgraphs may extend, each by its `id`, and how one is read from a
 * representation: under the rules of `trainer(id)` and `creature(id)` (a token, the caller's
 * session checked in the read's own statement, an unknown id null; the email field decides who
 * sees an email). Each goes through the request's loaders, so every representation of a type
 * in one `_entities` is read in one statement.
 */
const ENTITIES: Record<string, (id: number, context: GraphQLContext, info: GraphQLResolveInfo) => Promise<unknown>> = {
  Trainer: (id, context, info) => context.loaders.trainerById(id, { withCount: selectsField(info, 'creaturesOwned') }),
  Creature: (id, context) => context.loaders.creatureById(id),
};

/** The resolver map `buildSubgraphSchema` takes (its type is not exported by name). */
type SubgraphResolvers = NonNullable<Extract<Parameters<typeof buildSubgraphSchema>[0], { resolvers?: unknown }>['resolvers']>;

const keyDirective: ConstDirectiveNode = {
  kind: Kind.DIRECTIVE,
  name: { kind: Kind.NAME, value: 'key' },
  arguments: [{ kind: Kind.ARGUMENT, name: { kind: Kind.NAME, value: 'fields' }, value: { kind: Kind.STRING, value: 'id' } }],
};

const refused = (index: number, reason: string) =>
  new AppError('BAD_USER_INPUT', `representations[${index}] ${reason}`, [{ field: `representations.${index}`, message: reason }]);

/**
 * Checks what a router sends before `@apollo/subgraph` reads it: `_Any` takes any JSON, and a
 * representation that is no object, names no entity of this subgraph or carries a malformed
 * id is BAD_USER_INPUT (the whole field), never an internal error.
 */
function checkRepresentations(representations: unknown): void {
  if (!Array.isArray(representations)) return;
  representations.forEach((representation: unknown, index) => {
    if (typeof representation !== 'object' || representation === null || Array.isArray(representation)) {
      throw refused(index, 'must be an object with __typename and id');
    }
    const { __typename: typename, id } = representation as { __typename?: unknown; id?: unknown };
    if (typeof typename !== 'string' || !Object.hasOwn(ENTITIES, typename)) {
      throw refused(index, `must name one of ${Object.keys(ENTITIES).join(', ')} in __typename`);
    }
    if (parseId(id) === undefined) throw refused(index, 'has an id that is not a positive integer id');
  });
}

/**
 * The service's schema as an Apollo Federation 2 subgraph (FEDERATION=true): the same types and
 * resolvers (type-graphql's, with their middlewares, auth checks and argument validation, and
 * those schema.ts puts in place of some: answerDirectly), plus
 * `@link` to Federation, `@key(fields: "id")` on each entity type, and `@apollo/subgraph`'s
 * `_service` and `_entities`. The client schema (schema.graphql) is the one it starts from.
 */
export function buildSubgraph(schema: GraphQLSchema): GraphQLSchema {
  const typeDefs = visit(parse(printSchema(schema)), {
    ObjectTypeDefinition: (node) =>
      Object.hasOwn(ENTITIES, node.name.value) ? { ...node, directives: [...(node.directives ?? []), keyDirective] } : undefined,
  });
  const link = parse(`extend schema @link(url: "${FEDERATION_URL}", import: ["@key"])`);
  const resolvers = createResolversMap(schema) as Record<string, Record<string, unknown>>;
  for (const [typename, read] of Object.entries(ENTITIES)) {
    resolvers[typename].__resolveReference = (reference: { id: unknown }, context: GraphQLContext, info: GraphQLResolveInfo) =>
      read(parseId(reference.id)!, context, info);
  }
  const subgraph = buildSubgraphSchema({
    typeDefs: { kind: Kind.DOCUMENT, definitions: [...link.definitions, ...typeDefs.definitions] },
    resolvers: resolvers as SubgraphResolvers,
  });
  // `@apollo/subgraph` resolves `_entities` itself; its representations are checked first.
  const entities = subgraph.getQueryType()!.getFields()._entities;
  const resolveEntities = entities.resolve as GraphQLFieldResolver<unknown, GraphQLContext, { representations: unknown }>;
  entities.resolve = (source, args: { representations: unknown }, context: GraphQLContext, info) => {
    checkRepresentations(args.representations);
    return resolveEntities(source, args, context, info);
  };
  return subgraph;
}

/** The subgraph's SDL as `_service { sdl }` answers it to a router (committed as subgraph.graphql). */
export async function subgraphSDL(subgraph: GraphQLSchema): Promise<string> {
  const result = await execute({ schema: subgraph, document: parse('{ _service { sdl } }') });
  const sdl = (result.data?._service as { sdl?: unknown } | undefined)?.sdl;
  if (typeof sdl !== 'string') throw new Error('The subgraph did not answer _service { sdl }');
  return `${sdl.trimEnd()}\n`;
}

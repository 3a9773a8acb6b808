import { ApolloServer, type GraphQLRequestListener } from '@apollo/server';
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { ApolloServerPluginLandingPageLocalDefault } from '@apollo/server/plugin/landingPage/default';
import fastifyApollo from '@as-integrations/fastify';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config';
import { methodNotAllowed } from '../http-errors';
import type { Services } from '../services';
import type { GraphQLContext } from './context';
import { createFormatError, errorLoggingPlugin } from './format-error';
import { costLimitPlugin, limitRules, LIMITS } from './limits';
import { Loaders } from './loaders';
import { buildGraphQLSchema } from './schema';

/** Puts the operation name on the request, for logs and metrics (one hooks object for all requests). */
const OPERATION_NAME_HOOKS: GraphQLRequestListener<GraphQLContext> = {
  async didResolveOperation({ operationName, contextValue }) {
    contextValue.request.operationName = operationName;
  },
};

export async function registerGraphQL(app: FastifyInstance, config: Config, services: Services): Promise<void> {
  const schema = await buildGraphQLSchema();
  const apollo = new ApolloServer<GraphQLContext>({
    schema,
    validationRules: limitRules(),
    parseOptions: { maxTokens: LIMITS.tokens },
    introspection: config.graphqlIntrospection,
    includeStacktraceInErrorResponses: false,
    // No "Did you mean ...?" in production: it would hand out the schema that introspection hides.
    hideSchemaDetailsFromClientErrors: config.isProduction,
    formatError: createFormatError(config),
    logger: app.log,
    // Fastify's own close() drains HTTP; Apollo's drain plugin would call close() again from inside it.
    stopOnTerminationSignals: false,
    plugins: [
      { requestDidStart: async () => OPERATION_NAME_HOOKS },
      costLimitPlugin(schema),
      // The schema has no @cacheControl hints and every answer depends on the caller's token: the
      // default plugin would only wrap every field's resolution to compute `no-store` hints.
      ApolloServerPluginCacheControlDisabled(),
      errorLoggingPlugin(app.log),
      config.sandbox
        ? ApolloServerPluginLandingPageLocalDefault({ embed: true, includeCookies: false })
        : ApolloServerPluginLandingPageDisabled(),
    ],
  });
  await apollo.start();
  app.addHook('onClose', async () => apollo.stop());

  methodNotAllowed(app, '/graphql', ['GET', 'POST', 'OPTIONS']);
  await app.register(fastifyApollo(apollo), {
    path: '/graphql',
    context: async (request): Promise<GraphQLContext> => {
      const loaders = new Loaders(services);
      const findTrainer = async (id: number) => {
        const trainer = await loaders.trainerById.load(id);
        request.trainerId = trainer?.id ?? null;
        return trainer;
      };
      return {
        services,
        loaders,
        auth: services.auth.forRequest(request.headers.authorization, findTrainer),
        selfIds: new Set(),
        request,
        log: request.log,
        clientIp: request.ip,
      };
    },
  });
}

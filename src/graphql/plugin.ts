import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { ApolloServerPluginLandingPageLocalDefault } from '@apollo/server/plugin/landingPage/default';
import fastifyApollo from '@as-integrations/fastify';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config';
import type { Services } from '../services';
import type { GraphQLContext } from './context';
import { createFormatError } from './format-error';
import { Loaders } from './loaders';
import { buildGraphQLSchema } from './schema';

export async function registerGraphQL(app: FastifyInstance, config: Config, services: Services): Promise<void> {
  const apollo = new ApolloServer<GraphQLContext>({
    schema: await buildGraphQLSchema(),
    introspection: config.graphqlIntrospection,
    includeStacktraceInErrorResponses: false,
    formatError: createFormatError(app.log),
    logger: app.log,
    // Fastify's own close() drains HTTP; Apollo's drain plugin would call close() again from inside it.
    stopOnTerminationSignals: false,
    plugins: [
      config.sandbox
        ? ApolloServerPluginLandingPageLocalDefault({ embed: true, includeCookies: false })
        : ApolloServerPluginLandingPageDisabled(),
    ],
  });
  await apollo.start();
  app.addHook('onClose', async () => apollo.stop());

  await app.register(fastifyApollo(apollo), {
    path: '/graphql',
    context: async (request): Promise<GraphQLContext> => {
      const loaders = new Loaders(services);
      return {
        services,
        loaders,
        auth: services.auth.forRequest(request.headers.authorization, (id) => loaders.trainerById.load(id)),
        selfIds: new Set(),
      };
    },
  });
}

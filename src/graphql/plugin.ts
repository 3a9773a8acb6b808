import type { GraphQLSchema } from 'graphql';
import { ApolloServer, HeaderMap, type HTTPGraphQLRequest } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { Config } from '../config';
import { methodNotAllowed } from '../http/method-not-allowed';
import type { Admission } from '../http/admission';
import { noStore } from '../http/no-store';
import { jsonDepth, MAX_JSON_DEPTH } from '../http/json-body';
import { strictQueryString } from '../http/query-string';
import { AppError } from '../errors';
import { graphqlErrorHandler } from './http-errors';
import { attachRequestAuth } from '../auth/request-auth';
import type { Services } from '../services';
import type { GraphQLContext } from './context';
import { createFormatError, errorLoggingPlugin } from './format-error';
import { landingPageCsp, landingPagePlugin, registerIdeRoutes } from './ide';
import { Pipeline, type DocumentCheck } from './pipeline';
import type { DocumentRequest } from './trusted-documents';
import { Loaders } from './loaders';
import { buildGraphQLSchema } from './schema';
import { registerSubscriptions } from './subscriptions';
import { registerEventStream } from './event-stream';
import { LiveConnections } from './live-connections';
import type { Metrics } from '../ops/metrics';
import type { Tracing } from '../telemetry/spans';

const NO_IDE_MESSAGE = `This is the GraphQL API of the creature registry. Send POST /graphql with a JSON body such as {"query": "{ __typename }"} and Content-Type: application/json.
The in-browser IDE is off on this server (GRAPHQL_SANDBOX=true turns it on; it is off by default in production).
`;

/**
 * A GET's parameters, decoded once (strictQueryString: an undecodable escape or a repeated name is
 * BAD_USER_INPUT): every step after this one, the pipeline's checks and Apollo's run
 * alike, reads this `request.query` and nothing else (see graphQLRequestOf).
 */
const decodeQueryString = async (request: FastifyRequest) => {
  if (request.method === 'GET') request.query = strictQueryString(request.url);
};

/**
 * With the IDE off, a GET /graphql that carries no document (a browser, say) gets a line of
 * explanation instead of Apollo's CSRF refusal.
 */
const withoutIde = async (request: FastifyRequest, reply: FastifyReply) => {
  if (request.method !== 'GET') return;
  const { query, documentId, extensions } = request.query as Record<string, unknown>;
  if (query !== undefined || documentId !== undefined || extensions !== undefined) return;
  return reply.code(400).type('text/plain; charset=utf-8').send(NO_IDE_MESSAGE);
};

/** GET's variables and extensions are JSON in the query string: held to the depth bodies are held to (http/json-body.ts). */
const shallowQueryString = async (request: FastifyRequest) => {
  if (request.method !== 'GET') return;
  const { variables, extensions } = request.query as Record<string, unknown>;
  for (const value of [variables, extensions]) {
    if (typeof value === 'string' && jsonDepth(value) > MAX_JSON_DEPTH) {
      throw new AppError('BAD_USER_INPUT', `The query string nests arrays or objects deeper than ${MAX_JSON_DEPTH} levels`);
    }
  }
};

/**
 * The schema as an Apollo Federation 2 subgraph (federation.ts). Required only when FEDERATION is
 * on: @apollo/subgraph and the federation internals it loads are several MB of code and data that
 * a service without a router would hold for nothing.
 */
function subgraphOf(schema: GraphQLSchema): GraphQLSchema {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { buildSubgraph } = require('./federation') as typeof import('./federation');
  return buildSubgraph(schema);
}

/**
 * The request as Apollo takes it (what @as-integrations/fastify's handler builds), except that a
 * GET's search string is written again from `request.query`: Apollo reads a GET's parameters from
 * the search string, and so it and the pipeline's plugin read exactly the parameters decoded once
 * by decodeQueryString.
 */
function graphQLRequestOf(request: FastifyRequest): HTTPGraphQLRequest {
  const headers = new HeaderMap();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  let search = '';
  if (request.method === 'GET') search = `?${new URLSearchParams(request.query as Record<string, string>).toString()}`;
  else {
    // As URL's `search` would read it (without a fragment), without building a URL per request.
    const start = request.url.indexOf('?');
    if (start >= 0) search = request.url.slice(start).split('#', 1)[0];
    if (search === '?') search = '';
  }
  return { body: request.body, method: request.method.toUpperCase(), headers, search };
}

export async function registerGraphQL(
  app: FastifyInstance,
  config: Config,
  services: Services,
  requireDatabase: onRequestAsyncHookHandler,
  options: {
    /** Where each request waits while the database has no connection free. */
    admission?: Admission;
    sessionCheckMs?: number;
    metrics?: Metrics;
    documentChecks?: readonly DocumentCheck[];
    tracing?: Tracing;
  } = {},
): Promise<void> {
  // FEDERATION=true: the same schema as an Apollo Federation 2 subgraph (federation.ts).
  const schema = config.federation ? subgraphOf(await buildGraphQLSchema()) : await buildGraphQLSchema();
  // The one pipeline of a document, for HTTP and WebSocket alike. Parses, validates and compiles
  // the manifest's trusted documents now: a bad one stops start-up here.
  const pipeline = new Pipeline(schema, {
    introspection: config.graphqlIntrospection,
    isProduction: config.isProduction,
    trustedDocuments: config.trustedDocuments,
    routerSecret: config.routerSecret,
    metrics: options.metrics,
    checks: options.documentChecks,
    tracing: options.tracing,
  });
  const contextFor = (request: FastifyRequest): GraphQLContext => ({
    services,
    loaders: new Loaders(services, request.auth),
    auth: request.auth,
    selfIds: new Set(),
    request,
    log: request.log,
    clientIp: request.ip,
  });
  const apollo = new ApolloServer<GraphQLContext>({
    // Apollo parses and validates by the pipeline's rules, into the pipeline's cache, and hands the
    // operation to the pipeline's plugin, which runs it (Pipeline.plugin).
    schema,
    validationRules: [...pipeline.validationRules],
    parseOptions: pipeline.parseOptions,
    validationOptions: pipeline.validationOptions,
    // The pipeline's cache: a text parsed once (a trusted document at start) is never parsed again.
    documentStore: pipeline.documentStore(),
    // APQ registers documents only when there is no manifest (the trusted documents are looked up
    // by the pipeline's plugin, before Apollo reads the text).
    persistedQueries: { cache: pipeline.apqCache() },
    // Refused by noIntrospection instead, with a message that names this service's setting.
    introspection: true,
    includeStacktraceInErrorResponses: false,
    // No "Did you mean ...?" in production: it would hand out the schema that introspection hides.
    hideSchemaDetailsFromClientErrors: config.isProduction,
    formatError: createFormatError(config),
    logger: app.log,
    // Fastify's own close() drains HTTP; Apollo's drain plugin would call close() again from inside it.
    stopOnTerminationSignals: false,
    plugins: [
      // The operation checks (transport, variables' nesting, cost, the added checks), then the run.
      pipeline.plugin(),
      // The schema has no @cacheControl hints and every answer depends on the caller's token: the
      // default plugin would only wrap every field's resolution to compute `no-store` hints.
      ApolloServerPluginCacheControlDisabled(),
      // A subgraph would otherwise answer a router's `apollo-federation-include-trace` with each
      // field's timing (Apollo Studio's traces): nobody here reads them, and anyone could ask.
      ...(config.federation ? [ApolloServerPluginInlineTraceDisabled()] : []),
      errorLoggingPlugin(app.log),
      config.sandbox ? landingPagePlugin() : ApolloServerPluginLandingPageDisabled(),
    ],
  });
  await apollo.start();
  app.addHook('onClose', async () => apollo.stop());
  // Live events: two doors (WebSocket at /graphql, Server-Sent Events at /graphql/stream), one count of their connections.
  const live = new LiveConnections(services, config.corsOrigins, options.sessionCheckMs);
  registerSubscriptions(app, config, services, schema, pipeline, live, options);

  if (config.sandbox) registerIdeRoutes(app);
  // /graphql in a scope of its own: errors raised before Apollo has the request answer in
  // GraphQL's shape, and the database gate applies.
  await app.register(async (scope) => {
    scope.setErrorHandler(graphqlErrorHandler);
    scope.addHook('onRequest', decodeQueryString);
    if (config.sandbox) scope.addHook('onSend', landingPageCsp);
    else scope.addHook('onRequest', withoutIde);
    scope.addHook('onRequest', shallowQueryString);
    scope.addHook('onRequest', requireDatabase);
    scope.addHook('onRequest', noStore);
    // A GraphQL request weighs the cost of its document; the event stream (which runs no
    // document at the door and stays open) weighs nothing, so open streams never close the door.
    options.admission?.guard(scope, (request) =>
      request.routeOptions.url === '/graphql'
        ? pipeline.weightOf((request.method === 'GET' ? request.query : request.body) as DocumentRequest | undefined)
        : 0,
    );
    scope.addHook(
      'onRequest',
      attachRequestAuth((authorization, onKnown) => services.auth.forRequest(authorization, onKnown)),
    );
    methodNotAllowed(scope, '/graphql', ['GET', 'POST', 'OPTIONS']);
    methodNotAllowed(scope, '/graphql/stream', ['GET', 'POST']);
    registerEventStream(scope, config, services, schema, pipeline, live, options);
    scope.route({
      method: ['GET', 'POST', 'OPTIONS'],
      url: '/graphql',
      handler: async (request, reply) => {
        const { headers, body, status } = await apollo.executeHTTPGraphQLRequest({
          httpGraphQLRequest: graphQLRequestOf(request),
          context: async () => contextFor(request),
        });
        for (const [name, value] of headers) void reply.header(name, value);
        void reply.code(status ?? 200);
        return body.kind === 'complete' ? body.string : reply.send(Readable.from(body.asyncIterator));
      },
    });
  });
}

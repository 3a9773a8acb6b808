import { ApolloServer, HeaderMap, type GraphQLRequestListener, type HTTPGraphQLRequest } from '@apollo/server';
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { Readable } from 'node:stream';
import { InMemoryLRUCache } from '@apollo/utils.keyvaluecache';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { getNamedType, GraphQLError, isIntrospectionType, OperationTypeNode, type DocumentNode, type ValidationRule } from 'graphql';
import type { Config } from '../config';
import { methodNotAllowed } from '../http/method-not-allowed';
import { noStore } from '../http/no-store';
import { jsonDepth, MAX_JSON_DEPTH } from '../http/json-body';
import { AppError } from '../errors';
import { graphqlErrorHandler } from './http-errors';
import { attachRequestAuth } from '../auth/request-auth';
import type { Services } from '../services';
import type { GraphQLContext } from './context';
import { createFormatError, errorLoggingPlugin } from './format-error';
import { landingPageCsp, landingPagePlugin, registerIdeRoutes } from './ide';
import { costChecker, costLimitPlugin, limitRules, LIMITS, repeatedSelectionsGuard } from './limits';
import { DirectQueries } from './direct';
import { CompilingExecutor } from './executor';
import { Loaders } from './loaders';
import { buildGraphQLSchema } from './schema';
import { registerSubscriptions } from './subscriptions';
import { TrustedDocuments, type DocumentCounters } from './trusted-documents';
import type { Tracing } from '../telemetry/spans';

/**
 * Puts the operation name on the request, for logs and metrics, and refuses subscriptions, which
 * are taken over WebSocket only (one hooks object for all requests).
 */
const OPERATION_NAME_HOOKS: GraphQLRequestListener<GraphQLContext> = {
  async didResolveOperation({ operationName, operation, contextValue }) {
    if (contextValue.request) contextValue.request.operationName = operationName;
    if (operation?.operation === OperationTypeNode.SUBSCRIPTION) {
      throw new GraphQLError('Subscriptions are taken over WebSocket (graphql-transport-ws) at /graphql, not over HTTP', {
        extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } },
      });
    }
  },
};

/**
 * Apollo's own rule for `introspection: false` tells clients to "pass introspection: true to
 * ApolloServer"; this one names the setting of this service.
 */
const noIntrospection: ValidationRule = (context) => ({
  Field(node) {
    const type = context.getType();
    const parent = context.getParentType();
    // Reported once, where the introspection starts (`__schema`, `__type`), not on each field inside it.
    if (type && isIntrospectionType(getNamedType(type)) && !(parent && isIntrospectionType(parent))) {
      context.reportError(
        new GraphQLError(
          `Introspection is turned off on this server (GRAPHQL_INTROSPECTION=false; off by default in production), so "${node.name.value}" cannot be queried`,
          { nodes: [node] },
        ),
      );
    }
  },
});

const NO_IDE_MESSAGE = `This is the GraphQL API of the creature registry. Send POST /graphql with a JSON body such as {"query": "{ __typename }"} and Content-Type: application/json.
The in-browser IDE is off on this server (GRAPHQL_SANDBOX=true turns it on; it is off by default in production).
`;

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
 * The request as Apollo takes it (what @as-integrations/fastify's handler builds), except that a
 * GET naming a trusted document by id passes on the query string TrustedDocuments.httpHook
 * rewrote to its text: Apollo reads a GET's parameters from the search string, not from
 * `request.query`.
 */
function graphQLRequestOf(request: FastifyRequest): HTTPGraphQLRequest {
  const headers = new HeaderMap();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const rewritten = request.method === 'GET' && request.trustedDocument !== null;
  const search = rewritten
    ? `?${new URLSearchParams(request.query as Record<string, string>).toString()}`
    : new URL(request.url, `${request.protocol}://${request.hostname}/`).search;
  return { body: request.body, method: request.method.toUpperCase(), headers, search };
}

/**
 * Apollo's cache of parsed, validated documents, sized by what an entry really holds. Apollo's
 * own sizes a document by its JSON, which leaves out the query text every parsed node keeps a
 * reference to: distinct 90 KB queries (one token of comment each) were counted as 439 bytes, so
 * its 30 MiB cap let the heap fill until the process died (3,828 requests, heap limit 512 MB).
 */
export function documentStore(): InMemoryLRUCache<DocumentNode> {
  return new InMemoryLRUCache<DocumentNode>({
    maxSize: 32 * 2 ** 20,
    sizeCalculation: (document) => JSON.stringify(document).length + 2 * (document.loc?.source.body.length ?? 0),
  });
}

export async function registerGraphQL(
  app: FastifyInstance,
  config: Config,
  services: Services,
  requireDatabase: onRequestAsyncHookHandler,
  options: { sessionCheckMs?: number; directAnswers?: { count: number }; documents?: DocumentCounters; tracing?: Tracing } = {},
): Promise<void> {
  const schema = await buildGraphQLSchema();
  const checkCost = costChecker(schema);
  const validationRules = [...limitRules(), ...(config.graphqlIntrospection ? [] : [noIntrospection])];
  // Parses, validates and compiles the manifest's documents now: a bad one stops start-up here.
  const trusted = new TrustedDocuments(
    schema,
    config.trustedDocuments,
    { isProduction: config.isProduction, validationRules },
    options.documents,
  );
  const contextFor = (request: FastifyRequest): GraphQLContext => ({
    services,
    loaders: new Loaders(services, request.auth),
    auth: request.auth,
    selfIds: new Set(),
    request,
    log: request.log,
    clientIp: request.ip,
  });
  // Queries Apollo has run compiled are answered again without its pipeline (see DirectQueries).
  const direct = new DirectQueries(schema, checkCost, contextFor, options.directAnswers, trusted, options.tracing);
  const apollo = new ApolloServer<GraphQLContext>({
    // Apollo parses, validates and formats; graphql-jit executes (see CompilingExecutor).
    gateway: new CompilingExecutor(schema, direct, trusted, options.tracing).gateway(),
    validationRules,
    parseOptions: { maxTokens: LIMITS.tokens },
    // The trusted documents, parsed and validated at start, are found there and never parsed again.
    documentStore: trusted.documentStore(documentStore()),
    // APQ registers documents only when there is no manifest (the trusted documents are looked up
    // before Apollo, by TrustedDocuments.httpHook).
    persistedQueries: { cache: trusted.apqCache() },
    // Validation stops at the 10th error: a document of a hundred mistakes (unused variables,
    // unknown fields) cost 15-20 ms of CPU building, wrapping and formatting each one.
    validationOptions: { maxErrors: LIMITS.validationErrors },
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
      { requestDidStart: async () => OPERATION_NAME_HOOKS },
      costLimitPlugin(checkCost),
      trusted.countingPlugin(),
      // The schema has no @cacheControl hints and every answer depends on the caller's token: the
      // default plugin would only wrap every field's resolution to compute `no-store` hints.
      ApolloServerPluginCacheControlDisabled(),
      errorLoggingPlugin(app.log),
      config.sandbox ? landingPagePlugin() : ApolloServerPluginLandingPageDisabled(),
    ],
  });
  await apollo.start();
  app.addHook('onClose', async () => apollo.stop());
  registerSubscriptions(app, config, services, schema, trusted, options);

  if (config.sandbox) registerIdeRoutes(app);
  // /graphql in a scope of its own: errors raised before Apollo has the request answer in
  // GraphQL's shape, and the database gate applies.
  await app.register(async (scope) => {
    scope.setErrorHandler(graphqlErrorHandler);
    if (config.sandbox) scope.addHook('onSend', landingPageCsp);
    else scope.addHook('onRequest', withoutIde);
    scope.addHook('onRequest', shallowQueryString);
    scope.addHook('onRequest', requireDatabase);
    scope.addHook('onRequest', noStore);
    scope.addHook(
      'onRequest',
      attachRequestAuth((authorization, onKnown) => services.auth.forRequest(authorization, onKnown)),
    );
    scope.decorateRequest('trustedDocument', null);
    // Which documents may run is decided first, before any step parses the text.
    scope.addHook('preHandler', trusted.httpHook());
    scope.addHook('preHandler', repeatedSelectionsGuard());
    methodNotAllowed(scope, '/graphql', ['GET', 'POST', 'OPTIONS']);
    const apolloHandler = async (request: FastifyRequest, reply: FastifyReply) => {
      const { headers, body, status } = await apollo.executeHTTPGraphQLRequest({
        httpGraphQLRequest: graphQLRequestOf(request),
        context: async () => contextFor(request),
      });
      for (const [name, value] of headers) void reply.header(name, value);
      void reply.code(status ?? 200);
      return body.kind === 'complete' ? body.string : reply.send(Readable.from(body.asyncIterator));
    };
    scope.route<{ Reply: string }>({
      method: ['GET', 'POST', 'OPTIONS'],
      url: '/graphql',
      handler: async (request, reply) => {
        const answer = await direct.answer(request, (type) => void reply.type(type));
        return answer ?? apolloHandler(request, reply);
      },
    });
  });
}

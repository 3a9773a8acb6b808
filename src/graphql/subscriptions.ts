import type { FastifyInstance } from 'fastify';
import {
  GraphQLError,
  OperationTypeNode,
  getOperationAST,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionArgs,
  type GraphQLSchema,
} from 'graphql';
import { handleProtocols, makeServer, type Context } from 'graphql-ws';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { RateLimiterMemory, type RateLimiterRes } from 'rate-limiter-flexible';
import type { RequestAuth } from '../auth/request-auth';
import type { Config } from '../config';
import { toAppError } from '../error-mapping';
import { AppError } from '../errors';
import { clientAddressOf } from '../http/client-address';
import type { Services } from '../services';
import type { GraphQLContext, TrackedQueue } from './context';
import { createFormatError } from './format-error';
import { costChecker, LIMITS, limitRules, repeatedSelections } from './limits';
import { Loaders } from './loaders';

/** The contract's WebSocket limits. */
export const WS_LIMITS = {
  subscriptionsPerConnection: 20,
  /** Subscribe messages one connection may send per 10 s (each may read the database and follow a Redis channel). */
  subscribesPer10s: 30,
  connectionsPerAddress: 50,
  messageBytes: 64 * 1024,
  /** Bytes a socket may have waiting to be sent before its reader counts as too slow and is dropped. */
  bufferedBytes: 1024 * 1024,
  /** Pings every so often; a socket that has not answered the last one by the next is closed. */
  pingMs: 15_000,
  /** How often open connections are checked for expired tokens and ended sessions. */
  sessionCheckMs: 10_000,
  /** Open sockets in all, and how long one may wait before sending connection_init. */
  connections: 10_000,
  initWaitMs: 3_000,
  /** On shutdown, how long sockets get to finish their closing handshake before they are cut. */
  closeGraceMs: 2_000,
} as const;

/** Validated documents remembered by query text (a reconnecting client sends the same ones again). */
const MAX_REMEMBERED_DOCUMENTS = 200;

/** graphql-ws close codes beyond the standard ones. */
const UNAUTHORIZED = 4401;
const GOING_AWAY = 1001;
const INTERNAL_ERROR = 1011;
const TRY_AGAIN_LATER = 1013;

interface Connection {
  /** Names the connection to the subscribe rate limiter. */
  readonly key: number;
  readonly socket: WebSocket;
  readonly ip: string;
  /** Every event queue its subscriptions opened: all are ended when the socket closes. */
  readonly queues: Set<TrackedQueue>;
  closed: boolean;
  auth?: RequestAuth;
  trainerId?: number;
  sessionId?: number;
  expiresAtMs?: number;
}

type WsContext = Context<Record<string, unknown> | undefined, { connection: Connection }>;

const refuse = (socket: Duplex, status: number, reason: string) => {
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${reason.length}\r\n\r\n${reason}`,
  );
};

/**
 * GraphQL over WebSocket (the graphql-transport-ws protocol of graphql-ws) at /graphql, beside
 * Apollo's HTTP transport: the same schema, context, limits and error rules, for subscriptions.
 * The token comes in connection_init's payload (`{ "authorization": "Bearer <token>" }`); a
 * missing or refused one closes the socket with 4401, and so does a token that expires or a
 * session that ends while the socket is open (checked on a timer for all sockets at once, in one
 * merged statement, not per message). An Origin outside CORS_ORIGINS (when set) is refused, so
 * is a 51st connection from one address, a 21st subscription on one connection and a message
 * over 64 KiB. Sockets are pinged; a reader too slow to take its events is dropped rather than
 * buffered for. On close (SIGTERM) every socket gets 1001 after what was queued for it.
 */
export function registerSubscriptions(
  app: FastifyInstance,
  config: Config,
  services: Services,
  schema: GraphQLSchema,
  { sessionCheckMs = WS_LIMITS.sessionCheckMs }: { sessionCheckMs?: number } = {},
): void {
  const formatError = createFormatError(config);
  const checkCost = costChecker(schema);
  const rules = [...specifiedRules, ...limitRules()];
  const clientAddress = clientAddressOf(config.trustProxy);
  const connections = new Set<Connection>();
  const perAddress = new Map<string, number>();
  let closing = false;
  let connectionCount = 0;
  const subscribes = new RateLimiterMemory({ points: WS_LIMITS.subscribesPer10s, duration: 10 });

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: WS_LIMITS.messageBytes,
    perMessageDeflate: false,
    handleProtocols: (protocols) => handleProtocols(protocols),
  });

  const close = (connection: Connection, code: number, reason: string) => {
    if (connection.socket.readyState === connection.socket.OPEN || connection.socket.readyState === connection.socket.CONNECTING) {
      connection.socket.close(code, reason);
    }
  };

  /** An error as the client sees it (catalogue code, masked internals); the unexpected ones are logged. */
  const formatLogged = (error: GraphQLError) => {
    const appError = toAppError(error.originalError ?? error);
    if (appError.code === 'INTERNAL_SERVER_ERROR' && error.originalError)
      app.log.error({ err: error.originalError }, 'subscription failed');
    return formatError(error.toJSON(), error);
  };

  // Parsed and validated documents by query text, as Apollo keeps them over HTTP.
  const documents = new Map<string, { document: DocumentNode } | { errors: readonly GraphQLError[] }>();
  const checkDocument = (query: string): { document: DocumentNode } | { errors: readonly GraphQLError[] } => {
    const known = documents.get(query);
    if (known) return known;
    let checked: { document: DocumentNode } | { errors: readonly GraphQLError[] };
    const repeated = query.length <= LIMITS.queryLength ? repeatedSelections(query) : null;
    if (query.length > LIMITS.queryLength) {
      checked = {
        errors: [
          new GraphQLError(`The query is longer than ${LIMITS.queryLength} characters`, { extensions: { code: 'GRAPHQL_PARSE_FAILED' } }),
        ],
      };
    } else if (repeated) {
      checked = { errors: [new GraphQLError(repeated, { extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } })] };
    } else {
      try {
        const document = parse(query, { maxTokens: LIMITS.tokens });
        const invalid = validate(schema, document, rules, { maxErrors: LIMITS.validationErrors });
        checked =
          invalid.length > 0
            ? {
                errors: invalid.map(
                  (error) => new GraphQLError(error.message, { nodes: error.nodes, extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }),
                ),
              }
            : { document };
      } catch (error) {
        // The codes Apollo gives these over HTTP.
        const message = error instanceof GraphQLError ? error.message : 'The query could not be parsed';
        checked = { errors: [new GraphQLError(message, { extensions: { code: 'GRAPHQL_PARSE_FAILED' } })] };
      }
    }
    if (documents.size >= MAX_REMEMBERED_DOCUMENTS) documents.delete(documents.keys().next().value!);
    documents.set(query, checked);
    return checked;
  };

  const server = makeServer<Record<string, unknown> | undefined, { connection: Connection }>({
    schema,
    connectionInitWaitTimeout: WS_LIMITS.initWaitMs,
    onConnect: async (ctx: WsContext) => {
      const { connection } = ctx.extra;
      const authorization = ctx.connectionParams?.authorization;
      const auth = services.auth.forRequest(typeof authorization === 'string' ? authorization : undefined);
      let claims;
      let viewer;
      try {
        claims = auth.tokenClaims();
        viewer = await auth.viewer();
      } catch (error) {
        const code = toAppError(error).code;
        if (code === 'UNAUTHENTICATED') close(connection, UNAUTHORIZED, 'Unauthorized');
        // The database is away: try again later, not "unauthorized".
        else if (code === 'SERVICE_UNAVAILABLE') close(connection, TRY_AGAIN_LATER, 'Service unavailable');
        else {
          app.log.error({ err: error }, 'WebSocket connection refused by an unexpected error');
          close(connection, INTERNAL_ERROR, 'Internal server error');
        }
        return false;
      }
      if (!viewer) {
        close(connection, UNAUTHORIZED, 'Unauthorized');
        return false;
      }
      Object.assign(connection, { auth, trainerId: claims.trainerId, sessionId: claims.sessionId, expiresAtMs: claims.expiresAtMs });
      return true;
    },
    onSubscribe: async (ctx: WsContext, _id, payload) => {
      // The subscription asked for is already reserved in ctx.subscriptions; queues count too,
      // since a client reusing an id while its first subscribe is pending leaves one untracked there.
      const { connection } = ctx.extra;
      for (const queue of connection.queues) if (queue.finished) connection.queues.delete(queue);
      const open = Math.max(Object.keys(ctx.subscriptions).length - 1, connection.queues.size);
      if (open >= WS_LIMITS.subscriptionsPerConnection) {
        return [
          new GraphQLError(`At most ${WS_LIMITS.subscriptionsPerConnection} subscriptions per connection`, {
            extensions: { code: 'BAD_USER_INPUT' },
          }),
        ];
      }
      const checked = checkDocument(payload.query);
      if ('errors' in checked) return checked.errors;
      const { document } = checked;
      const operation = getOperationAST(document, payload.operationName);
      if (operation?.operation !== OperationTypeNode.SUBSCRIPTION) {
        return [
          new GraphQLError('Only subscriptions are taken over WebSocket: send queries and mutations with POST /graphql', {
            extensions: { code: 'BAD_USER_INPUT' },
          }),
        ];
      }
      const variables = payload.variables ?? {};
      const tooCostly = checkCost(document, operation, payload.operationName ?? undefined, variables);
      if (tooCostly) return [tooCostly];
      const auth = connection.auth!;
      const contextValue: GraphQLContext = {
        services,
        loaders: new Loaders(services, auth),
        auth,
        selfIds: new Set(),
        clientIp: connection.ip,
        log: app.log,
        connection: {
          drop: (reason) => {
            app.log.info({ reason, trainerId: connection.trainerId }, 'WebSocket subscriber dropped');
            connection.socket.terminate();
          },
          track: (queue) => {
            if (connection.closed) void queue.return();
            else connection.queues.add(queue);
          },
        },
      };
      // Last, after the checks above: they must see this subscription's reservation before the next message is read.
      const refused = await subscribes.consume(connection.key).then(
        () => undefined,
        (limited: RateLimiterRes) => limited,
      );
      if (refused) {
        const retryAfter = Math.max(1, Math.ceil(refused.msBeforeNext / 1000));
        const limited = new AppError(
          'RATE_LIMITED',
          `Too many subscriptions started on this connection; try again in ${retryAfter} s`,
          [],
          retryAfter,
        );
        return [new GraphQLError(limited.message, { originalError: limited })];
      }
      const args: ExecutionArgs = { schema, document, operationName: payload.operationName, variableValues: variables, contextValue };
      return args;
    },
    onError: (_ctx, _id, _payload, errors) => errors.map(formatLogged),
    onNext: (_ctx, _id, _payload, _args, result) => (result.errors ? { ...result, errors: result.errors.map(formatLogged) } : undefined),
  });

  wss.on('connection', (socket: WebSocket, request: IncomingMessage) => {
    const ip = clientAddress(request);
    const connection: Connection = { key: (connectionCount += 1), socket, ip, queues: new Set(), closed: false };
    connections.add(connection);
    perAddress.set(ip, (perAddress.get(ip) ?? 0) + 1);
    socket.on('error', () => socket.terminate());

    let answered = true;
    const ping = setInterval(() => {
      if (!answered) {
        socket.terminate();
        return;
      }
      answered = false;
      socket.ping();
    }, WS_LIMITS.pingMs);
    socket.on('pong', () => (answered = true));

    const closed = server.opened(
      {
        protocol: socket.protocol,
        send: (data) => {
          if (socket.readyState !== socket.OPEN) return;
          // A reader that does not keep up is dropped, not buffered for.
          if (socket.bufferedAmount > WS_LIMITS.bufferedBytes) {
            socket.terminate();
            return;
          }
          socket.send(data);
        },
        close: (code, reason) => socket.close(code, reason),
        onMessage: (handle) =>
          socket.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
            const text = Array.isArray(data)
              ? Buffer.concat(data).toString('utf8')
              : Buffer.isBuffer(data)
                ? data.toString('utf8')
                : Buffer.from(new Uint8Array(data)).toString('utf8');
            handle(text).catch((error: unknown) => {
              app.log.error({ err: toAppError(error) }, 'WebSocket message failed');
              close(connection, INTERNAL_ERROR, 'Internal server error');
            });
          }),
      },
      { connection },
    );
    socket.once('close', (code, reason) => {
      clearInterval(ping);
      connection.closed = true;
      for (const queue of connection.queues) void queue.return();
      connection.queues.clear();
      connections.delete(connection);
      const left = (perAddress.get(ip) ?? 1) - 1;
      if (left > 0) perAddress.set(ip, left);
      else perAddress.delete(ip);
      void closed(code, String(reason));
    });
  });

  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Node takes its own error listener off an upgraded socket: a reset must not become an uncaught exception.
    socket.on('error', () => socket.destroy());
    const path = (request.url ?? '').split('?')[0];
    if (request.headers.upgrade?.toLowerCase() !== 'websocket') return refuse(socket, 400, 'Only WebSocket upgrades are taken');
    if (path !== '/graphql') return refuse(socket, 404, 'Not Found');
    if (closing) return refuse(socket, 503, 'Service Unavailable');
    if (connections.size >= WS_LIMITS.connections) return refuse(socket, 503, 'Service Unavailable');
    const origin = request.headers.origin;
    if (origin !== undefined && config.corsOrigins.length > 0 && !config.corsOrigins.includes(origin)) {
      return refuse(socket, 403, 'Forbidden');
    }
    const ip = clientAddress(request);
    if ((perAddress.get(ip) ?? 0) >= WS_LIMITS.connectionsPerAddress) return refuse(socket, 429, 'Too Many Requests');
    wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, request));
  };
  app.server.on('upgrade', onUpgrade);

  // Expired tokens and ended sessions: every open connection at once, through the merged caller read.
  let checking = false;
  const checkSessions = setInterval(() => {
    // While the database is slow, checks do not pile up.
    if (checking) return;
    const now = Date.now();
    for (const connection of connections) {
      if (connection.expiresAtMs !== undefined && connection.expiresAtMs <= now) close(connection, UNAUTHORIZED, 'Token expired');
    }
    const checked = [...connections].filter((c) => c.trainerId !== undefined && c.sessionId !== undefined);
    checking = true;
    void Promise.all(
      checked.map(async (connection) => {
        const caller = await services.trainers.findCaller(connection.trainerId!, connection.sessionId!).catch(() => undefined);
        // undefined: the database did not answer; the connection stays until it can tell.
        if (caller === null) close(connection, UNAUTHORIZED, 'Session ended');
      }),
    ).finally(() => (checking = false));
  }, sessionCheckMs);
  checkSessions.unref();

  app.addHook('preClose', async () => {
    closing = true;
    clearInterval(checkSessions);
    app.server.off('upgrade', onUpgrade);
    for (const connection of connections) close(connection, GOING_AWAY, 'Going away');
    // A client that never answers the closing handshake is cut after a grace period (ws waits 30 s).
    const deadline = Date.now() + WS_LIMITS.closeGraceMs;
    while (connections.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    for (const connection of connections) connection.socket.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  });
}
